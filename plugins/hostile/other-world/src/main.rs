//! A valid WASI command component that is not a tool plugin: paddock must refuse to load it.
fn main() {
    println!("I am a command, not a tool plugin");
}
