-- An agent role for a fleet database `fsdelta` whose queue its owner has created (run
-- `fsdelta submit` or `fsdelta jobs reap` once as the owner: that creates the tables, the
-- functions and the row-level security these grants name). Agents read everything, register
-- machines, and write nothing else directly: they claim, heartbeat, finish, release and reap
-- jobs only through fsdelta's functions, which check the secret token a job was claimed with,
-- and they insert runs and samples only under that token, never choosing their ids. Ids are
-- identity columns: no sequence grant is needed.
CREATE ROLE fsdelta_agent LOGIN;
GRANT CONNECT ON DATABASE fsdelta TO fsdelta_agent;
GRANT USAGE ON SCHEMA public TO fsdelta_agent;
GRANT SELECT ON fsdelta_meta, runs, samples, metrics, histograms, profiles, attachments, machines,
    jobs, machine_health, canaries TO fsdelta_agent;
GRANT INSERT (label, suite, started_at, status, host, kernel, fsdelta_version, environment,
    owner_pid, owner_start_time, owner_host, uuid) ON runs TO fsdelta_agent;
GRANT INSERT (run_id, config, test, repetition, sequence, fs_type, path, device, mount_options,
    mkfs_options, facts, status, error, started_at, duration_s, workload) ON samples
    TO fsdelta_agent;
GRANT INSERT ON metrics, histograms, profiles, attachments TO fsdelta_agent;
GRANT UPDATE (status, finished_at) ON runs TO fsdelta_agent;
GRANT INSERT, UPDATE ON machines TO fsdelta_agent;
GRANT EXECUTE ON FUNCTION fsdelta_claim, fsdelta_heartbeat, fsdelta_finish, fsdelta_release,
    fsdelta_reap, fsdelta_canary TO fsdelta_agent;
