//! Run selectors (`42`, `latest`, `latest~N`, `label:TEXT`, each optionally qualified by the
//! machine: `label:6.18-rc1,host:nvme-box`), parsed once at the CLI edge and
//! resolved by [`super::Store::select`]. Must never touch a database.

use super::StoreError;
use std::fmt;
use std::str::FromStr;

/// Which runs a command works on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// One run by id.
    Id(i64),
    /// The N-th newest ended run (`latest` = 0, `latest~2` = 2).
    Latest(u32),
    /// Every run with this label, pooled as repetitions.
    Label(String),
    /// The runs of `sel` made on the machine with this host name (`SEL,host:NAME`).
    OnHost {
        /// The unqualified selector (never itself `OnHost`).
        sel: Box<Selector>,
        /// Host name, as recorded in the run's environment.
        host: String,
    },
}

impl FromStr for Selector {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || StoreError::BadSelector(s.to_string());
        if let Some((sel, host)) = s.rsplit_once(",host:") {
            if host.is_empty() || host.contains(',') {
                return Err(bad());
            }
            let sel: Selector = sel.parse().map_err(|_| bad())?;
            if matches!(sel, Selector::OnHost { .. }) {
                return Err(bad());
            }
            return Ok(Selector::OnHost {
                sel: Box::new(sel),
                host: host.to_string(),
            });
        }
        if let Some(label) = s.strip_prefix("label:") {
            if label.is_empty() {
                return Err(bad());
            }
            return Ok(Selector::Label(label.to_string()));
        }
        if s == "latest" {
            return Ok(Selector::Latest(0));
        }
        if let Some(n) = s.strip_prefix("latest~") {
            return n.parse().map(Selector::Latest).map_err(|_| bad());
        }
        match s.parse::<i64>() {
            Ok(id) if id > 0 => Ok(Selector::Id(id)),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Id(id) => write!(f, "{id}"),
            Selector::Latest(0) => f.write_str("latest"),
            Selector::Latest(n) => write!(f, "latest~{n}"),
            Selector::Label(l) => write!(f, "label:{l}"),
            Selector::OnHost { sel, host } => write!(f, "{sel},host:{host}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!("42".parse::<Selector>().unwrap(), Selector::Id(42));
        assert_eq!("latest".parse::<Selector>().unwrap(), Selector::Latest(0));
        assert_eq!("latest~3".parse::<Selector>().unwrap(), Selector::Latest(3));
        assert_eq!(
            "label:6.18-rc1".parse::<Selector>().unwrap(),
            Selector::Label("6.18-rc1".into())
        );
        assert_eq!(
            "label:6.18-rc1,host:nvme-box".parse::<Selector>().unwrap(),
            Selector::OnHost {
                sel: Box::new(Selector::Label("6.18-rc1".into())),
                host: "nvme-box".into()
            }
        );
        assert_eq!(
            "latest~1,host:vm".parse::<Selector>().unwrap(),
            Selector::OnHost {
                sel: Box::new(Selector::Latest(1)),
                host: "vm".into()
            }
        );
        // A comma alone stays part of a label.
        assert_eq!(
            "label:a,b".parse::<Selector>().unwrap(),
            Selector::Label("a,b".into())
        );
        for bad in [
            "",
            "0",
            "-1",
            "latest~",
            "latest~x",
            "label:",
            "newest",
            "label:x,host:",
            ",host:a",
            "label:x,host:a,host:b",
        ] {
            assert!(bad.parse::<Selector>().is_err(), "{bad}");
        }
    }

    #[test]
    fn displays_as_parsed() {
        for s in [
            "42",
            "latest",
            "latest~3",
            "label:a b",
            "label:a b,host:nvme-1",
            "7,host:h",
        ] {
            assert_eq!(s.parse::<Selector>().unwrap().to_string(), s);
        }
    }
}
