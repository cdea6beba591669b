-- The ceremony tables churn: every row is inserted, consumed within minutes and deleted by the sweeper a minute
-- later. With the default thresholds (20% of the table) autovacuum waited for thousands of dead rows and then
-- vacuumed and analyzed them all at once, a burst of work that showed as a tail in sign-in latency on a small
-- machine. Fixed thresholds make each vacuum small and frequent; the rows' statistics never change in shape (one
-- lookup by primary key each), so they are analyzed rarely.
ALTER TABLE passkey_authentication_challenges SET (
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 20000,
    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500000);
ALTER TABLE passkey_registration_challenges SET (
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 20000,
    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500000);
ALTER TABLE passkey_account_registrations SET (
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000,
    autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 20000,
    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 500000);
