//! Machines that drift (issue 38): each agent runs a short canary suite before it claims a job
//! and compares it with its own history of canaries; when the canary moved beyond what the
//! machine can detect, the agent marks itself unhealthy and takes no job until its owner clears
//! it (`fsdelta machines clear NAME`). Here: the tables, the database functions and the
//! queue's calls; the judgement itself is `compare::power::drift`, the canary's run is the
//! agent's.
//!
//! The trust model is issue 33's: machines may share one agent role, so the database, not the
//! agent, guards what an agent may do. An agent role has no privilege on `machine_health` or
//! `canaries` beyond SELECT; it records a canary only through `fsdelta_canary` (SECURITY
//! DEFINER), which can mark the named machine unhealthy but never healthy; and `fsdelta_claim`
//! gives no job to a machine marked unhealthy. Only the schema's owner (or a member of its role)
//! clears a mark ([`Queue::clear_machine`]). What the database cannot know is whether an agent's
//! canary numbers are true: a compromised agent can report a healthy canary, or mark another
//! name unhealthy (a denial of service that its owner sees in `fsdelta machines` and clears);
//! it can never put a machine marked unhealthy back to work.
//!
//! This module must never judge numbers (that is the compare room's) nor run a workload.

use super::{Agent, Queue, QueueError, db};
use chrono::{DateTime, Utc};

/// Queue migration 3: machine health and canary history (see the module docs for who may do
/// what); `fsdelta_claim` replaced by the same function that also refuses unhealthy machines.
pub(super) const MIGRATION: &str = "
    CREATE TABLE machine_health (
        name TEXT PRIMARY KEY REFERENCES machines (name) ON DELETE CASCADE,
        healthy BOOLEAN NOT NULL,
        reason TEXT NOT NULL,
        since TIMESTAMPTZ NOT NULL DEFAULT now(),
        canary_id BIGINT
    );
    CREATE TABLE canaries (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        machine TEXT NOT NULL,
        at TIMESTAMPTZ NOT NULL DEFAULT now(),
        healthy BOOLEAN NOT NULL,
        in_history BOOLEAN NOT NULL,
        reason TEXT NOT NULL,
        metrics TEXT NOT NULL
    );
    CREATE INDEX canaries_machine ON canaries (machine, id);
    REVOKE ALL ON machine_health, canaries FROM PUBLIC;

    -- Record a canary of machine p_agent; an unhealthy one marks the machine unhealthy (the
    -- first reason is kept until the owner clears it). Never marks a machine healthy.
    CREATE FUNCTION fsdelta_canary(p_agent text, p_healthy boolean, p_reason text,
            p_metrics text) RETURNS bigint
        LANGUAGE plpgsql SECURITY DEFINER
    AS $f$ DECLARE cid bigint;
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM machines m WHERE m.name = p_agent) THEN
            RAISE EXCEPTION 'fsdelta_canary: no machine named % is registered', p_agent
                USING ERRCODE = '22023';
        END IF;
        IF p_healthy IS NULL OR p_reason IS NULL OR p_metrics IS NULL
           OR length(p_reason) > 10000 OR length(p_metrics) > 1000000 THEN
            RAISE EXCEPTION 'fsdelta_canary: a canary has a verdict, a reason of at most 10000 characters and its metrics (at most 1 MB)'
                USING ERRCODE = '22023';
        END IF;
        INSERT INTO canaries (machine, healthy, in_history, reason, metrics)
            VALUES (p_agent, p_healthy, p_healthy, p_reason, p_metrics) RETURNING id INTO cid;
        IF NOT p_healthy THEN
            INSERT INTO machine_health AS h (name, healthy, reason, since, canary_id)
                VALUES (p_agent, false, p_reason, now(), cid)
                ON CONFLICT (name) DO UPDATE SET healthy = false, reason = excluded.reason,
                    since = excluded.since, canary_id = excluded.canary_id
                WHERE h.healthy;
        END IF;
        RETURN cid;
    END $f$;

    CREATE OR REPLACE FUNCTION fsdelta_claim(p_agent text, p_host text, p_classes text[],
            p_lease_s double precision, p_token text)
        RETURNS TABLE (c_id bigint, c_label text, c_suite_name text, c_suite_text text,
            c_config_name text, c_config_text text, c_tests text[], c_repeat integer,
            c_baseline text, c_attempts integer)
        LANGUAGE plpgsql SECURITY DEFINER
    AS $f$ DECLARE jid bigint;
    BEGIN
        PERFORM fsdelta_check_token(p_token);
        IF p_agent IS NULL OR p_agent = '' OR length(p_agent) > 200 THEN
            RAISE EXCEPTION 'fsdelta_claim: the agent name must be 1 to 200 characters'
                USING ERRCODE = '22023';
        END IF;
        IF p_lease_s IS NULL OR NOT (p_lease_s > 0 AND p_lease_s <= 86400) THEN
            RAISE EXCEPTION 'fsdelta_claim: the lease must be more than 0 and at most 86400 s, not %',
                p_lease_s USING ERRCODE = '22023';
        END IF;
        SELECT c.job_id INTO jid FROM job_claims c JOIN jobs j ON j.id = c.job_id
            WHERE c.token = p_token AND j.state = 'running';
        IF jid IS NULL AND NOT EXISTS (
                SELECT 1 FROM machine_health h WHERE h.name = p_agent AND NOT h.healthy) THEN
            SELECT j.id INTO jid FROM jobs j
                WHERE j.state = 'queued'
                  AND (j.class IS NULL OR j.class = ANY(coalesce(p_classes, '{}')))
                  AND (j.host IS NULL OR j.host = p_agent OR j.host = p_host)
                ORDER BY j.id LIMIT 1
                FOR UPDATE SKIP LOCKED;
            IF jid IS NOT NULL THEN
                UPDATE jobs j SET state = 'running', agent = p_agent, attempts = j.attempts + 1,
                    claimed_at = now(), heartbeat_at = now(), lease_s = p_lease_s,
                    run_id = NULL, error = NULL
                    WHERE j.id = jid;
                INSERT INTO job_claims (job_id, token) VALUES (jid, p_token)
                    ON CONFLICT (job_id) DO UPDATE SET token = excluded.token;
            END IF;
        END IF;
        UPDATE machines m SET last_heartbeat = now() WHERE m.name = p_agent;
        RETURN QUERY SELECT j.id, j.label, j.suite_name, j.suite_text, j.config_name,
            j.config_text, j.tests, j.repeat, j.baseline, j.attempts
            FROM jobs j WHERE j.id = jid;
    END $f$;

    REVOKE EXECUTE ON FUNCTION fsdelta_canary FROM PUBLIC;
    DO $d$ DECLARE f regprocedure;
    BEGIN
        FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
                 WHERE p.proname LIKE 'fsdelta\\_%' AND p.pronamespace = current_schema()::regnamespace
        LOOP
            EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp',
                           f, current_schema());
        END LOOP;
    END $d$;";

/// A machine's health as the queue keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Health {
    /// Whether it takes jobs.
    pub healthy: bool,
    /// Why it was marked unhealthy, or who cleared it.
    pub reason: String,
    /// Since when.
    pub since: DateTime<Utc>,
}

/// One stored canary of a machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Canary {
    /// Its id.
    pub id: i64,
    /// When it was recorded.
    pub at: DateTime<Utc>,
    /// Its verdict.
    pub healthy: bool,
    /// The verdict's reason.
    pub reason: String,
    /// Its values, as the agent recorded them (JSON: metric key to values).
    pub metrics: String,
}

/// A registered machine, as `fsdelta machines` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineInfo {
    /// Agent name.
    pub name: String,
    /// Host name.
    pub host: String,
    /// Classes.
    pub classes: Vec<String>,
    /// Last heartbeat or claim.
    pub last_heartbeat: DateTime<Utc>,
    /// Health; `None` when no canary ever marked it (healthy).
    pub health: Option<Health>,
    /// Canaries in its history (those a later canary is compared with).
    pub canaries: i64,
}

impl MachineInfo {
    /// Whether it takes jobs.
    pub fn healthy(&self) -> bool {
        self.health.as_ref().is_none_or(|h| h.healthy)
    }
}

/// What `clear_machine` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cleared {
    /// It was unhealthy; it takes jobs again.
    Cleared,
    /// It was not marked unhealthy: nothing changed (except the history, if asked).
    WasHealthy,
}

impl Queue {
    /// Whether a queued job is waiting that `agent` may run (the test `fsdelta_claim` makes;
    /// another agent may still take it first): the agent runs its canary only then.
    pub fn claimable(&mut self, agent: &Agent) -> Result<bool, QueueError> {
        self.with(|c| {
            c.query_one(
                "SELECT EXISTS (SELECT 1 FROM jobs j WHERE j.state = 'queued'
                     AND (j.class IS NULL OR j.class = ANY($1))
                     AND (j.host IS NULL OR j.host = $2 OR j.host = $3))",
                &[&agent.classes, &agent.name, &agent.host],
            )
            .map(|r| r.get(0))
        })
    }

    /// Record a canary of `agent`'s machine: `healthy` false marks the machine unhealthy (it
    /// then claims no job until cleared). Returns the canary's id.
    pub fn record_canary(
        &mut self,
        agent: &Agent,
        healthy: bool,
        reason: &str,
        metrics_json: &str,
    ) -> Result<i64, QueueError> {
        self.with(|c| {
            c.query_one(
                "SELECT fsdelta_canary($1, $2, $3, $4)",
                &[&agent.name, &healthy, &reason, &metrics_json],
            )
            .map(|r| r.get(0))
        })
    }

    /// The last `limit` canaries in `name`'s history (healthy ones since the history was last
    /// reset), oldest first.
    pub fn canary_history(&mut self, name: &str, limit: usize) -> Result<Vec<Canary>, QueueError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.with(|c| {
            c.query(
                "SELECT id, at, healthy, reason, metrics FROM (
                     SELECT * FROM canaries WHERE machine = $1 AND in_history
                     ORDER BY id DESC LIMIT $2) t ORDER BY id",
                &[&name, &limit],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| Canary {
                id: r.get(0),
                at: r.get(1),
                healthy: r.get(2),
                reason: r.get(3),
                metrics: r.get(4),
            })
            .collect())
    }

    /// `name`'s health; `None` when no canary ever marked it.
    pub fn health(&mut self, name: &str) -> Result<Option<Health>, QueueError> {
        let row = self.with(|c| {
            c.query_opt(
                "SELECT healthy, reason, since FROM machine_health WHERE name = $1",
                &[&name],
            )
        })?;
        Ok(row.map(|r| Health {
            healthy: r.get(0),
            reason: r.get(1),
            since: r.get(2),
        }))
    }

    /// Every registered machine with its health, by name.
    pub fn machines(&mut self) -> Result<Vec<MachineInfo>, QueueError> {
        let rows = self.with(|c| {
            c.query(
                "SELECT m.name, m.host, m.classes, m.last_heartbeat, h.healthy, h.reason, h.since,
                        (SELECT count(*) FROM canaries k WHERE k.machine = m.name AND k.in_history)
                 FROM machines m LEFT JOIN machine_health h ON h.name = m.name
                 ORDER BY m.name",
                &[],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| MachineInfo {
                name: r.get(0),
                host: r.get(1),
                classes: r.get(2),
                last_heartbeat: r.get(3),
                health: r.get::<_, Option<bool>>(4).map(|healthy| Health {
                    healthy,
                    reason: r.get(5),
                    since: r.get(6),
                }),
                canaries: r.get(7),
            })
            .collect())
    }

    /// Let machine `name` take jobs again (its owner's role only: an agent role has no
    /// privilege on `machine_health`). With `reset_history`, its earlier canaries are no
    /// longer compared with (the machine changed for good: a new disk, a new kernel), so its
    /// next canaries build a new history. `note` says why, kept as the reason.
    pub fn clear_machine(
        &mut self,
        name: &str,
        reset_history: bool,
        note: &str,
    ) -> Result<Cleared, QueueError> {
        let mut tx = self.client.transaction().map_err(db)?;
        let known = tx
            .query_opt("SELECT 1 FROM machines WHERE name = $1", &[&name])
            .map_err(db)?
            .is_some();
        if !known {
            return Err(QueueError::Invalid(format!(
                "no machine named '{name}' is registered (see `fsdelta machines`)"
            )));
        }
        let n = tx
            .execute(
                "UPDATE machine_health SET healthy = true, since = now(),
                     reason = format('cleared by %s at %s: %s (was: %s)', current_user,
                                     now()::timestamptz(0), $2::text, reason)
                 WHERE name = $1 AND NOT healthy",
                &[&name, &note],
            )
            .map_err(db)?;
        if reset_history {
            tx.execute(
                "UPDATE canaries SET in_history = false WHERE machine = $1",
                &[&name],
            )
            .map_err(db)?;
        }
        tx.commit().map_err(db)?;
        Ok(if n > 0 {
            Cleared::Cleared
        } else {
            Cleared::WasHealthy
        })
    }
}
