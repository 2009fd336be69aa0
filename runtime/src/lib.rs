//! paddock: a coding-agent runtime whose tools are sandboxed WebAssembly components.
