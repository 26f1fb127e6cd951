# contrib: benchmarks and fuzz targets (built on request, not installed).
