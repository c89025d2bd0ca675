//! The one catalogue of output formats, as hyperfine's exporters: a [`Format`] type, the one
//! place that maps a name to it ([`Format::from_name`]), which formats each kind of document has
//! ([`formats`], with the words `--help` shows for each), and one entry point, [`render`], that
//! picks the renderer of a format for a document.
//!
//! Why a file of its own: `compare`, `history`, `export` and `report` each chose their renderer
//! in their own place. To add a format: a variant here, its name in `from_name`, the documents
//! it applies to in `formats`, its arm in `render` (the renderer itself beside its document's
//! others: `report::compare`, `report::history`, `report::export`, `report::html`). It must never
//! read anything nor compute statistics: documents arrive rendered-ready.

use crate::compare::history::History;
use crate::model::{RunInfo, SampleRecord};
use crate::report::compare::{CompareDoc, ManyDoc};
use crate::report::html::ReportInput;

/// Every output format fsdelta writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// 80-column text, mailing-list ready.
    Text,
    /// Markdown tables.
    Markdown,
    /// One table for a whole comparison: a column per side, 80 columns.
    Table,
    /// JSON with a `schema_version`.
    Json,
    /// CSV, one row per value.
    Csv,
    /// One self-contained HTML file.
    Html,
}

impl Format {
    /// Every format, in the order they are listed.
    pub const ALL: [Format; 6] = [
        Format::Text,
        Format::Table,
        Format::Markdown,
        Format::Json,
        Format::Csv,
        Format::Html,
    ];

    /// The format's name on the command line (`--format NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Markdown => "markdown",
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Html => "html",
        }
    }

    /// The format a name means: the one place names are read.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The kinds of document fsdelta renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DocKind {
    /// A comparison with verdicts (`compare`, 2 or more sides).
    Comparison,
    /// A metric's history over runs (`history`).
    History,
    /// Every stored number of runs (`export`).
    Runs,
    /// The report with charts (`report`).
    Report,
}

/// The formats a kind of document has, each with what it gives (shown by `--help`), the
/// default first.
pub fn formats(kind: DocKind) -> &'static [(Format, &'static str)] {
    match kind {
        DocKind::Comparison => &[
            (
                Format::Text,
                "80-column text, a block per test with intervals and reasons",
            ),
            (
                Format::Table,
                "one 80-column table, a column per side, verdict marks and numbered reasons",
            ),
            (
                Format::Markdown,
                "the same one table in Markdown, reasons as footnotes",
            ),
            (
                Format::Json,
                "JSON with a schema_version, intervals and p-values",
            ),
        ],
        DocKind::History => &[(Format::Text, "80-column text"), (Format::Json, "JSON")],
        DocKind::Runs => &[
            (Format::Json, "JSON with a schema_version"),
            (Format::Csv, "CSV, one row per metric value"),
        ],
        DocKind::Report => &[(Format::Html, "one self-contained HTML file")],
    }
}

/// A document to render.
pub enum Doc<'a> {
    /// Two sides compared.
    Comparison(&'a CompareDoc<'a>),
    /// Every other side against the first.
    Comparisons(&'a ManyDoc<'a>),
    /// A metric's history.
    History(&'a History),
    /// Runs with their samples.
    Runs(&'a [(RunInfo, Vec<SampleRecord>)]),
    /// The HTML report's input.
    Report(&'a ReportInput),
}

impl Doc<'_> {
    /// What kind of document it is.
    pub fn kind(&self) -> DocKind {
        match self {
            Doc::Comparison(_) | Doc::Comparisons(_) => DocKind::Comparison,
            Doc::History(_) => DocKind::History,
            Doc::Runs(_) => DocKind::Runs,
            Doc::Report(_) => DocKind::Report,
        }
    }
}

/// Why a document cannot be rendered.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// JSON serialisation failed.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The format does not apply to the document (the command line offers only those that do).
    #[error("no {format} output for this document; the formats are: {known}")]
    NotFor {
        /// The format asked for.
        format: Format,
        /// The formats there are, comma-separated.
        known: String,
    },
}

/// Render `doc` in `format`: the one place a format picks its renderer.
pub fn render(format: Format, doc: &Doc<'_>) -> Result<String, FormatError> {
    use crate::report::{compare, export, history, html, table};
    Ok(match (format, doc) {
        (Format::Text, Doc::Comparison(d)) => compare::text(d),
        (Format::Table, Doc::Comparison(d)) => table::text_pair(d),
        (Format::Markdown, Doc::Comparison(d)) => table::markdown_pair(d),
        (Format::Json, Doc::Comparison(d)) => compare::json(d)?,
        (Format::Text, Doc::Comparisons(d)) => compare::many_text(d),
        (Format::Table, Doc::Comparisons(d)) => table::text_many(d),
        (Format::Markdown, Doc::Comparisons(d)) => table::markdown_many(d),
        (Format::Json, Doc::Comparisons(d)) => compare::many_json(d)?,
        (Format::Text, Doc::History(h)) => history::text(h),
        (Format::Json, Doc::History(h)) => history::json(h)?,
        (Format::Json, Doc::Runs(runs)) => export::json(runs)?,
        (Format::Csv, Doc::Runs(runs)) => export::csv(runs),
        (Format::Html, Doc::Report(input)) => html::render(input),
        (format, doc) => {
            return Err(FormatError::NotFor {
                format,
                known: formats(doc.kind())
                    .iter()
                    .map(|(f, _)| f.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_and_unknown_names_do_not() {
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
        assert_eq!(Format::from_name("yaml"), None);
        assert_eq!(Format::from_name("Text"), None);
    }

    #[test]
    fn a_format_that_does_not_apply_says_which_do() {
        let e = render(Format::Markdown, &Doc::Runs(&[])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no markdown output for this document; the formats are: json, csv"
        );
        // Every listed format of a kind renders it.
        for (f, _) in formats(DocKind::Runs) {
            render(*f, &Doc::Runs(&[])).unwrap();
        }
    }
}
