-- An agent role for a fleet database `fsdelta` whose schema its owner has created (any fsdelta
-- command that writes, `fsdelta cleanup` say, run once as the owner does that). Agents insert
-- runs and samples, finish their runs, register, and update jobs; they cannot delete or alter
-- runs, or submit jobs.
CREATE ROLE fsdelta_agent LOGIN;
GRANT CONNECT ON DATABASE fsdelta TO fsdelta_agent;
GRANT USAGE ON SCHEMA public TO fsdelta_agent;
GRANT SELECT ON fsdelta_meta, runs, samples, metrics, histograms, profiles, attachments, machines,
    jobs TO fsdelta_agent;
GRANT INSERT ON runs, samples, metrics, histograms, profiles, attachments TO fsdelta_agent;
GRANT UPDATE (status, finished_at) ON runs TO fsdelta_agent;
GRANT INSERT, UPDATE ON machines TO fsdelta_agent;
GRANT UPDATE ON jobs TO fsdelta_agent;
