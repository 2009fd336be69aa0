fn main() -> std::process::ExitCode {
    paddock::cli::main()
}
