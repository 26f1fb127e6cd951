# The PostgreSQL server module (synchro_push); see src/pg/*.c.
