//! Checks whose failure can come by chance, run again a bounded number of times.
//!
//! An A/A comparison (the same thing on both sides) is flagged `regressed` or `improved` at the
//! statistics' false-alarm rate whatever the code does (a few per cent per metric, more on a
//! shared CI machine whose noise drifts), while a real side effect (a position effect, a
//! configuration that leaks into the other side) shows in every attempt. So such a check passes
//! when one of a few attempts passes, and fails when every one does: the chance of a false
//! failure falls from a few per cent to a few in a hundred thousand, and a systematic effect
//! still fails it. Bounded by attempts, never by time; every failed attempt is printed.
//!
//! Never use it for a check that must hold on every run (an exit code, a parser, a planted
//! effect measured in a way load cannot fake): those must pass the first time. The one
//! exception is an end-to-end outcome the machine's load can legitimately change into another
//! honest answer (a bisection that ends with a range holding the culprit instead of the
//! culprit, tests/bisect_generic); a wrong answer must still fail at once.

/// Run `attempt` (given its 0-based number) up to `attempts` times; return at the first that
/// passes; panic with every attempt's reason when none does.
pub fn passes_in_one_of(
    attempts: usize,
    what: &str,
    mut attempt: impl FnMut(usize) -> Result<(), String>,
) {
    let mut reasons = Vec::new();
    for i in 0..attempts {
        match attempt(i) {
            Ok(()) => {
                if i > 0 {
                    eprintln!("{what}: passed at attempt {} of {attempts}", i + 1);
                }
                return;
            }
            Err(why) => {
                eprintln!("{what}: attempt {} of {attempts} failed:\n{why}", i + 1);
                reasons.push(why);
            }
        }
    }
    panic!(
        "{what}: all {attempts} attempts failed (a chance failure repeats this rarely; look for a \
         systematic effect):\n{}",
        reasons.join("\n---\n")
    );
}
