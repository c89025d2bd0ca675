//! dbench's output parser on arbitrary text: it must return Ok or a ParseError whose line is a
//! line of the input, never panic, and give finite metrics when it accepts.
#![no_main]

use fsdelta::dbench::external as dbench;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match dbench::parse(text) {
        Ok(p) => {
            for m in p.metrics() {
                assert!(m.value.is_finite(), "{} = {}", m.name, m.value);
            }
        }
        Err(e) => assert!(e.line <= text.lines().count().max(1), "{e}"),
    }
});
