//! The syntax of an event list (`--events 'btrfs:*,kmem:kmalloc'`, a suite test's `events`):
//! which kernel tracepoints to count, as written. Resolving them against tracefs and counting
//! them is the probe's (`crate::probe::events`).
//!
//! Why here: a bad list is a mistake in what the user asked for, found with the rest of the plan
//! before anything runs. This module must never read tracefs or open a counter.

/// An event list that does not parse; the message names the item and the fix (the same text as
/// `crate::probe::events::EventError::Syntax`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad event '{item}': {why} (write GROUP:NAME, e.g. ext4:ext4_da_write_begin or btrfs:*, separated by commas)"
)]
pub struct EventSyntaxError {
    /// The offending item.
    pub item: String,
    /// What is wrong with it.
    pub why: String,
}

/// One item of an event list as written: `group:name`, the name possibly a glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// Trace group (`ext4`, `kmem`).
    pub group: String,
    /// Event name or a glob over the group's names (`*`, `ext4_da_*`).
    pub name: String,
}

fn is_ident(s: &str, glob: bool) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || (glob && (c == '*' || c == '?')))
}

/// Parse `btrfs:*,kmem:kmalloc`: items separated by commas (blanks around them ignored).
pub fn parse_list(list: &str) -> Result<Vec<EventSpec>, EventSyntaxError> {
    let mut out: Vec<EventSpec> = Vec::new();
    for raw in list.split(',') {
        let item = raw.trim();
        let bad = |why: &str| EventSyntaxError {
            item: item.to_string(),
            why: why.to_string(),
        };
        if item.is_empty() {
            return Err(bad("an empty item"));
        }
        let Some((group, name)) = item.split_once(':') else {
            return Err(bad("no ':' between group and name"));
        };
        if name.contains(':') {
            return Err(bad("more than one ':' (filters go in --events-filter)"));
        }
        if !is_ident(group, false) {
            return Err(bad(
                "the group must be letters, digits and '_' (a glob only in the name)",
            ));
        }
        if !is_ident(name, true) {
            return Err(bad(
                "the name must be letters, digits and '_', with '*' or '?' as a glob",
            ));
        }
        let spec = EventSpec {
            group: group.into(),
            name: name.into(),
        };
        if !out.contains(&spec) {
            out.push(spec);
        }
    }
    Ok(out)
}
