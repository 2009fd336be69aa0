//! paddock: a coding-agent runtime whose tools are sandboxed WebAssembly components.

pub mod model;
