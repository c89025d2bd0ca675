//! Built-in suites. A suite is a list of named tests, each an engine with its options; the
//! `quick` suite is sized to finish (3 repetitions) in under 5 minutes on a 2-core machine.
//!
//! Must never touch the filesystem: a suite only says what to run.

use super::PlanError;

/// How a test is run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineSpec {
    /// The native fs_mark engine with these fs_mark flags (without `-d`: the run's directory is
    /// used).
    FsMark {
        /// fs_mark flags.
        args: Vec<String>,
    },
}

/// One test of a suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestSpec {
    /// Name, unique in its suite.
    pub name: String,
    /// What it measures, for `--help` and reports.
    pub description: String,
    /// How it runs.
    pub engine: EngineSpec,
}

/// A named list of tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suite {
    /// Suite name.
    pub name: String,
    /// Tests in run order.
    pub tests: Vec<TestSpec>,
}

/// Names of the built-in suites.
pub const BUILTIN_SUITES: &[&str] = &["quick"];

fn fsmark(name: &str, description: &str, args: &str) -> TestSpec {
    TestSpec {
        name: name.into(),
        description: description.into(),
        engine: EngineSpec::FsMark {
            args: args.split_whitespace().map(String::from).collect(),
        },
    }
}

/// A built-in suite by name.
pub fn builtin(name: &str) -> Result<Suite, PlanError> {
    match name {
        "quick" => Ok(Suite {
            name: "quick".into(),
            tests: vec![
                fsmark(
                    "emptyfiles",
                    "create 2 x 10000 empty files in 16 subdirectories (round robin, 256 a directory), no sync",
                    "-s 0 -n 10000 -t 2 -S 0 -D 16 -N 256",
                ),
                fsmark(
                    "smallfiles",
                    "create 2 x 2000 files of 4 KiB, fsync each before close",
                    "-s 4096 -n 2000 -t 2 -S 1",
                ),
                fsmark(
                    "bigdir",
                    "create 20000 empty files in one directory, no sync",
                    "-s 0 -n 20000 -t 1 -S 0",
                ),
            ],
        }),
        other => Err(PlanError::UnknownSuite {
            name: other.into(),
            known: BUILTIN_SUITES.join(", "),
        }),
    }
}

impl Suite {
    /// The tests named in `names` (all when empty), in suite order, or an error listing the known
    /// tests.
    pub fn select(&self, names: &[String]) -> Result<Vec<TestSpec>, PlanError> {
        if names.is_empty() {
            return Ok(self.tests.clone());
        }
        for n in names {
            if !self.tests.iter().any(|t| &t.name == n) {
                return Err(PlanError::UnknownTest {
                    name: n.clone(),
                    suite: self.name.clone(),
                    known: self
                        .tests
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        Ok(self
            .tests
            .iter()
            .filter(|t| names.contains(&t.name))
            .cloned()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_suite_has_the_foundation_tests() {
        let s = builtin("quick").unwrap();
        let names: Vec<_> = s.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["emptyfiles", "smallfiles", "bigdir"]);
        let EngineSpec::FsMark { args } = &s.tests[0].engine;
        assert_eq!(args.join(" "), "-s 0 -n 10000 -t 2 -S 0 -D 16 -N 256");
    }

    #[test]
    fn selecting_an_unknown_test_lists_the_known_ones() {
        let s = builtin("quick").unwrap();
        let e = s.select(&["nope".into()]).unwrap_err().to_string();
        assert!(e.contains("emptyfiles, smallfiles, bigdir"), "{e}");
        let picked = s.select(&["bigdir".into(), "emptyfiles".into()]).unwrap();
        assert_eq!(picked.len(), 2);
        assert_eq!(picked[0].name, "emptyfiles");
        assert!(builtin("slow").unwrap_err().to_string().contains("quick"));
    }
}
