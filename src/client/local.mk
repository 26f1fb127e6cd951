# libsynchro-client and synchro-cli; see src/client/*.c.
