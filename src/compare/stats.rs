//! Two-sample statistics for verdicts (being written).
