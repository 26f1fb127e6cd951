# Integration suites against a throwaway PostgreSQL (tests/integration/with-pg).
