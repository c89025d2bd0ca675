//! Where a workload runs: scratch directories (and later loop images and devices), and the facts
//! of a target (filesystem type, mount options, device) recorded with every sample.
//!
//! Why a room of its own: setting up and always tearing down what fsdelta creates is the one job
//! here. This room must never decide what to run.
