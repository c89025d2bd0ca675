//! How results are shown: text tables (80 columns, mailing-list ready), JSON with a
//! `schema_version`, CSV, markdown and HTML with plots. The fs_mark / fio / dbench native output
//! formats are their wings' (`crate::fsmark::output`, `crate::fio::output`,
//! `crate::dbench::output`).
//!
//! Why a room of its own: every renderer is a pure function from records to bytes, so output can
//! be tested byte for byte and written wherever the CLI edge decides. [`format`] is the one
//! catalogue of output formats (a name, the documents it applies to, one `render` entry point).
//! Everything arrives as values: `read` reads the store, `compare` judges, this room renders. It
//! must never measure and never see a store.

pub mod compare;
pub mod export;
pub mod fio_logs;
pub mod format;
pub mod gather;
pub mod history;
pub mod html;
pub mod iterations;
pub mod profile;
pub mod summary;
pub mod svg;
pub mod table;
pub mod text;
