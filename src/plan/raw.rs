//! What suite and config files are read into before they are checked: the raw structs of
//! `suitefile` and `config` derive `Deserialize` (with `deny_unknown_fields`), and every value
//! whose type a user can get wrong is a [`Loose`], which keeps the value as written next to
//! the typed reading. The validation pass then says what it found in the plan's own words
//! ("`time` must be a whole number, not \"10\"") instead of serde's.
//!
//! Why here: the files' messages are output (tests and users rely on their text), and serde's
//! messages for wrong types and unknown keys do not name the table, the key and the fix. This
//! module must never decide what a value means: that is the validation pass of each file.

use serde::Deserialize;
use serde::de::DeserializeOwned;

/// A value as written, and read as `T` when it is one.
#[derive(Clone, Debug)]
pub(crate) struct Loose<T> {
    /// The value as written, for messages (`Display` writes it as TOML: `"10"`, `1.5`, `[1]`).
    pub written: toml::Value,
    /// The value as a `T`, or `None` when it is not one.
    pub fit: Option<T>,
}

impl<T> Loose<T> {
    /// The typed value, or `Err(written)` for the caller's message.
    pub fn get(&self) -> Result<&T, &toml::Value> {
        self.fit.as_ref().ok_or(&self.written)
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Loose<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let written = toml::Value::deserialize(d)?;
        // No raw field takes a date, and a date would read as a string: keep it a misfit.
        let fit = match written {
            toml::Value::Datetime(_) => None,
            _ => T::deserialize(written.clone()).ok(),
        };
        Ok(Loose { written, fit })
    }
}

/// The first key of a table (given as its `(key, value)` pairs) that is not in `known`, in the
/// table's order (a TOML table's keys are sorted, so this is the alphabetically first unknown
/// key, as the hand-walking parsers reported it).
pub(crate) fn unknown_key<'k, V>(
    table: impl IntoIterator<Item = (&'k str, V)>,
    known: &[&str],
) -> Option<(&'k str, V)> {
    table.into_iter().find(|(k, _)| !known.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misfit_keeps_what_was_written() {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            n: Loose<u64>,
            s: Loose<String>,
        }
        let r: Raw = toml::from_str("n = -1\ns = 'x'\n").unwrap();
        assert_eq!(r.n.get().unwrap_err().to_string(), "-1");
        assert_eq!(r.s.get().unwrap(), "x");
        assert!(toml::from_str::<Raw>("n = 1\ns = 'x'\nz = 1\n").is_err());
        let r: Raw = toml::from_str("n = 1\ns = 1979-05-27\n").unwrap();
        assert_eq!(r.s.get().unwrap_err().type_str(), "datetime");
    }
}
