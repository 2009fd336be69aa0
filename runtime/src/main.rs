fn main() -> std::process::ExitCode {
    paddock::main()
}
