//! The paddock plugin SDK: a tool is a struct (its arguments) and a function (its work).
//!
//! ```ignore
//! use paddock_sdk::{Output, Spec, Tool, ToolError};
//!
//! /// Arguments of `shout`.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Shout { /// The text to shout.
//!     text: String }
//!
//! impl Tool for Shout {
//!     const NAME: &'static str = "shout";
//!     fn spec() -> Spec { Spec::new("Upper-cases text.").read_only() }
//!     fn run(self) -> Result<Output, ToolError> { Ok(Output::text(self.text.to_uppercase())) }
//! }
//!
//! paddock_sdk::export_tools!(Shout);
//! ```
//!
//! The SDK derives the JSON Schema from the arguments struct (doc comments become field
//! descriptions), parses arguments into it, and turns errors into the WIT `tool-error`. Hooks
//! have the same shape in [`hook`]: the struct is the hook's config, `export_hook!` exports it.
//! The WIT the bindings come from is inside this crate (`wit/`).

mod budget;
pub mod hook;
mod image;
mod path;
mod spec;

pub use budget::{FUEL_VAR, OUTPUT_BYTES_VAR, fuel_budget, output_budget};
pub use image::{IMAGE_OUTPUT_PREFIX, MAX_IMAGE_BYTES, image_format};
pub use path::{WORKSPACE, display_path, resolve};
pub use spec::{Example, Output, Overflow, Risk, Spec, ToolError};

#[doc(hidden)]
pub mod bindings {
    // Bound against `tool-host` (tool-plugin plus the `exec` and `http` capabilities) so that
    // capability tools are written like any other. The built component imports only what the
    // plugin calls: a tool that never calls `exec::run` does not import `exec`, and the host
    // refuses any capability import the preset does not grant (S6).
    wit_bindgen::generate!({
        world: "tool-host",
        path: "wit",
        pub_export_macro: true,
        export_macro_name: "__export_tool_plugin",
        default_bindings_module: "paddock_sdk::bindings",
    });
}

/// Run an allow-listed program through the host (S6). Calling it makes the plugin import the
/// `exec` capability, which its preset must grant (`plugins.NAME.grants.exec`).
pub mod exec {
    pub use crate::bindings::paddock::plugin::exec::{
        Command, Output, ShellCommand, ShellJob, ShellReport, run, shell, shell_jobs, write_stdin,
    };
}

/// Make an HTTP request to an allow-listed host (S6). Calling it makes the plugin import the
/// `http` capability, which its preset must grant (`plugins.NAME.grants.http`).
pub mod http {
    pub use crate::bindings::paddock::plugin::http::{Request, Response, fetch};
}

pub use schemars;
pub use serde;
pub use serde_json;

use bindings::paddock::plugin::types as wit;

/// One tool. `Self` is the arguments object: deserialized from the call's JSON, and described
/// to the model by the JSON Schema derived from it.
pub trait Tool: serde::de::DeserializeOwned + schemars::JsonSchema {
    /// The name the model calls: `^[A-Za-z0-9_-]{1,64}$`, unique in the plugin.
    const NAME: &'static str;
    /// Description and runtime metadata.
    fn spec() -> Spec;
    /// Does the work.
    fn run(self) -> Result<Output, ToolError>;
}

/// Sends a line to the session log.
pub fn log(message: &str) {
    bindings::paddock::plugin::log::log(bindings::paddock::plugin::log::Level::Info, message);
}

#[doc(hidden)]
pub fn describe<T: Tool>() -> wit::ToolSpec {
    let schema = schemars::schema_for!(T);
    let mut parameters = serde_json::to_value(&schema).unwrap_or_default();
    if let Some(object) = parameters.as_object_mut() {
        // The title is the Rust type's name: noise for the model.
        object.remove("title");
    }
    T::spec().into_wit(T::NAME, parameters.to_string())
}

#[doc(hidden)]
pub fn dispatch<T: Tool>(args: &str) -> Result<wit::ToolOutput, wit::ToolError> {
    let parsed: T = serde_json::from_str(args).map_err(|e| {
        ToolError::invalid_args(format!(
            "arguments for `{}` do not fit its schema: {e}",
            T::NAME
        ))
        .into_wit()
    })?;
    parsed
        .run()
        .map(Output::into_wit)
        .map_err(ToolError::into_wit)
}

#[doc(hidden)]
pub fn unknown_tool(name: &str, known: &[&str]) -> wit::ToolError {
    ToolError::new(
        "UNKNOWN_TOOL",
        format!(
            "this plugin has no tool `{name}`; it has: {}",
            known.join(", ")
        ),
    )
    .into_wit()
}

/// Exports the listed tools as this component's `tools` interface.
#[macro_export]
macro_rules! export_tools {
    ($($tool:ty),+ $(,)?) => {
        struct __PaddockTools;

        impl $crate::bindings::exports::paddock::plugin::tools::Guest for __PaddockTools {
            fn list() -> ::std::vec::Vec<$crate::bindings::paddock::plugin::types::ToolSpec> {
                ::std::vec![$($crate::describe::<$tool>()),+]
            }

            fn call(
                name: ::std::string::String,
                args: ::std::string::String,
            ) -> ::std::result::Result<
                $crate::bindings::paddock::plugin::types::ToolOutput,
                $crate::bindings::paddock::plugin::types::ToolError,
            > {
                type Run = fn(&str) -> ::std::result::Result<
                    $crate::bindings::paddock::plugin::types::ToolOutput,
                    $crate::bindings::paddock::plugin::types::ToolError,
                >;
                const TABLE: &[(&str, Run)] = &[$((<$tool as $crate::Tool>::NAME, $crate::dispatch::<$tool>)),+];
                match TABLE.iter().find(|(tool, _)| *tool == name) {
                    Some((_, run)) => run(&args),
                    None => Err($crate::unknown_tool(&name, &[$(<$tool as $crate::Tool>::NAME),+])),
                }
            }
        }

        $crate::bindings::__export_tool_plugin!(__PaddockTools with_types_in $crate::bindings);
    };
}
