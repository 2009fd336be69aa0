//! The call's limits, as the host tells them (docs/output-paging.md): the host sets
//! `PADDOCK_OUTPUT_BYTES` in each call's environment to the number of bytes of content it
//! passes unchanged, and `PADDOCK_FUEL` to the call's instruction budget when it has one. A tool
//! that pages its own output stops on a line boundary within the first, so the host never has
//! to cut the result and the tool's continuation stays exact; a tool whose work grows with its
//! input (grep) sizes each call's share of the work by the second, and pages the rest.

/// The variable the host sets for every call that has an output budget.
pub const OUTPUT_BYTES_VAR: &str = "PADDOCK_OUTPUT_BYTES";
/// The variable the host sets for every call that has a fuel limit.
pub const FUEL_VAR: &str = "PADDOCK_FUEL";

/// Bytes of content the host passes unchanged in this call: the host's budget when it gave
/// one, else `default` (the tool's own budget, as declared in its spec).
pub fn output_budget(default: usize) -> usize {
    std::env::var(OUTPUT_BYTES_VAR)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// The call's instruction budget, or None when fuel is off.
pub fn fuel_budget() -> Option<u64> {
    std::env::var(FUEL_VAR)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
}
