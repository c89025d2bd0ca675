//! fio's JSON parser and the fio-JSON import on arbitrary text: Ok or a ParseError whose line is
//! a line of the input, never a panic, and finite metrics when accepted.
#![no_main]

use fsdelta::fio::external as fio;
use fsdelta::fio::import::import_fio_json;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.lines().count().max(1);
    match fio::parse(text) {
        Ok(p) => {
            for m in p.measurements().metrics {
                assert!(m.value.is_finite(), "{} = {}", m.name, m.value);
            }
        }
        Err(e) => assert!(e.line <= lines, "{e}"),
    }
    if let Ok(samples) = import_fio_json(text) {
        for s in samples {
            for m in s.metrics {
                assert!(m.value.is_finite(), "{} = {}", m.name, m.value);
            }
        }
    }
});
