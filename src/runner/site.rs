//! Where one configuration's samples run, behind one interface: a scratch directory that removes
//! itself (`fsdelta run` with no config file), or a configuration of a config file (loop image,
//! device, tmpfs, existing directory) from `crate::site`; a configuration with a kernel, whose
//! repetitions run in a guest (`crate::vm`, handed whole repetitions by the run loop, never
//! single samples); and, inside such a guest, the disks the host formatted
//! (`crate::vm::guest::GuestSite`, run by `super::guest`).
//!
//! Why: the sample step has one path for every kind of site. This file only adapts the `site`
//! and `vm` rooms' types; it must never mount, format or remove anything itself.

use crate::model::{Metric, SiteFacts};
use crate::probe::blockstat::BlockStat;
use crate::site::{Prepared, SiteError, env, scratch::ScratchSite};
use std::path::Path;

/// One configuration's place to run samples.
pub enum Site {
    /// A `dir` target fsdelta created, emptied between samples and removed at teardown.
    Scratch(ScratchSite),
    /// A configuration of a config file.
    Configured(Box<crate::site::ConfiguredSite>),
    /// A configuration with a kernel: each repetition is one boot of a guest.
    Vm(Box<crate::vm::VmSite>),
    /// Inside a guest: the disks the host formatted for this repetition.
    Guest(Box<crate::vm::guest::GuestSite>),
}

fn in_a_guest(name: &str) -> SiteError {
    SiteError::Unusable {
        path: format!("config '{name}'"),
        message: "runs in a guest: the run loop hands it whole repetitions".into(),
    }
}

/// The host's settings that move results (CPU boost, THP, dirty ratios, the device's scheduler
/// and queue, tool versions: `crate::probe::hygiene::facts`), read as each sample is prepared,
/// as `machine.*` facts: "what differs" between two runs names a setting that changed. A guest's
/// samples carry the guest's own facts (`vm_*`, `host_*`), not these.
fn with_machine_settings(facts: &mut SiteFacts) {
    facts
        .extra
        .extend(crate::probe::hygiene::facts(&facts.device));
}

impl Site {
    /// The configuration's name (`scratch` for the scratch directory).
    pub fn name(&self) -> &str {
        match self {
            Site::Scratch(_) => "scratch",
            Site::Configured(t) => &t.config().name,
            Site::Vm(v) => &v.config().name,
            Site::Guest(g) => g.name(),
        }
    }

    /// Make the sample's directory (`sample` names it inside a scratch directory).
    pub fn prepare(&mut self, sample: &str) -> Result<Prepared, Box<(SiteFacts, SiteError)>> {
        match self {
            Site::Scratch(s) => {
                let dir = s
                    .fresh_subdir(sample)
                    .map_err(|e| Box::new((env::facts_for(s.path()), e)))?;
                let mut facts = env::facts_for(&dir);
                facts.extra.insert("config".into(), "scratch".into());
                with_machine_settings(&mut facts);
                Ok(Prepared { dir, facts })
            }
            Site::Configured(t) => t
                .prepare()
                .map(|p| {
                    let mut facts = p.facts;
                    with_machine_settings(&mut facts);
                    Prepared { dir: p.dir, facts }
                })
                .map_err(|e| Box::new((SiteFacts::default(), e))),
            Site::Vm(v) => Err(Box::new((
                SiteFacts::default(),
                in_a_guest(&v.config().name),
            ))),
            Site::Guest(g) => g
                .prepare()
                .map(|(dir, facts)| Prepared { dir, facts })
                .map_err(|e| Box::new((SiteFacts::default(), e))),
        }
    }

    /// The configuration's `before` hook.
    pub fn before(&mut self) -> Result<(), SiteError> {
        match self {
            Site::Scratch(_) | Site::Vm(_) => Ok(()),
            Site::Configured(t) => t.before_sample(),
            Site::Guest(g) => g.before_sample(),
        }
    }

    /// The configuration's `after` hook.
    pub fn after(&mut self) -> Result<(), SiteError> {
        match self {
            Site::Scratch(_) | Site::Vm(_) => Ok(()),
            Site::Configured(t) => t.after_sample(),
            Site::Guest(g) => g.after_sample(),
        }
    }

    /// Warnings the site has for the run's output since the last call (a configured target
    /// that replaced a busy loop device).
    pub fn take_warnings(&mut self) -> Vec<String> {
        match self {
            Site::Configured(t) => t.take_warnings(),
            Site::Scratch(_) | Site::Vm(_) | Site::Guest(_) => Vec::new(),
        }
    }

    /// The device counters now, when the target has a block device.
    pub fn counters(&self) -> Option<BlockStat> {
        match self {
            Site::Scratch(_) | Site::Vm(_) => None,
            Site::Configured(t) => t.counters().ok().flatten(),
            Site::Guest(g) => g.counters(),
        }
    }

    /// The sample is over. `measured`: it produced measurements, so a formatted filesystem is
    /// unmounted and mounted again, timed (`umount_s`, `mount_s`); a scratch directory empties
    /// the sample's directory either way.
    pub fn end_sample(&mut self, dir: &Path, measured: bool) -> Result<Vec<Metric>, SiteError> {
        match self {
            Site::Scratch(s) => {
                let _ = s.discard_subdir(dir);
                Ok(Vec::new())
            }
            Site::Configured(t) if measured => t.finish_sample(),
            Site::Configured(_) | Site::Vm(_) => Ok(Vec::new()),
            Site::Guest(g) => g.end_sample(measured),
        }
    }

    /// For the suite's `ondisk_remount`, after [`Site::end_sample`] returned `ended`: whether
    /// the sample's filesystem is now mounted afresh. A configured filesystem fsdelta formats
    /// was unmounted and mounted again there (`ended` then has its `mount_s`); a guest's disk
    /// was only unmounted and is mounted again here. Nothing else is (scratch, tmpfs, dir, an
    /// erofs image).
    pub fn mount_again(&mut self, ended: &[Metric]) -> Result<bool, SiteError> {
        match self {
            Site::Configured(_) => Ok(ended.iter().any(|m| m.name == "mount_s")),
            Site::Guest(g) => g.mount_again(),
            Site::Scratch(_) | Site::Vm(_) => Ok(false),
        }
    }

    /// Undo everything this site created (mounts, loop devices, images, directories).
    pub fn teardown(self) -> Result<(), SiteError> {
        match self {
            Site::Scratch(s) => {
                drop(s);
                Ok(())
            }
            Site::Configured(t) => t.teardown(),
            Site::Vm(v) => {
                let name = v.config().name.clone();
                v.teardown().map_err(|e| SiteError::Unusable {
                    path: format!("config '{name}'"),
                    message: e.to_string(),
                })
            }
            Site::Guest(g) => g.teardown(),
        }
    }
}
