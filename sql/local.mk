# The database side: install script and numbered migrations.
