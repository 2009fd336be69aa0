//! A fresh instance per call keeps nothing of the last one, even when the pooling allocator
//! hands it a slot an earlier instance of the same component used and resets it to the
//! component's copy-on-write memory image (S2): not a global, a word of the image, a page past
//! it, the memory's or the table's size, nor a table slot.

use paddock_sandbox::Sandbox;
use wasmtime::Store;
use wasmtime::component::{Component, Linker};

/// `fixtures/carry_state.wat`: `probe` returns one byte per place an earlier call left a trace
/// in (0 when it found none), then leaves a trace in each. Turned into a component when the
/// test runs, so the repository holds only its text.
fn carry_state() -> Vec<u8> {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/carry_state.wat"
    );
    wat::parse_file(file).expect("the fixture is valid WAT")
}

/// Every trace `probe` leaves, as it reports them when it finds them all.
const ALL_TRACES: u32 = 0x8101_1101;

fn probe(
    engine: &wasmtime::Engine,
    pre: &wasmtime::component::InstancePre<()>,
    times: usize,
) -> Vec<u32> {
    let mut store = Store::new(engine, ());
    store.set_fuel(10_000_000).expect("fuel");
    store.set_epoch_deadline(1_000_000);
    let instance = pre.instantiate(&mut store).expect("instantiates");
    let probe = instance
        .get_typed_func::<(), (u32,)>(&mut store, "probe")
        .expect("exports probe");
    (0..times)
        .map(|_| probe.call(&mut store, ()).expect("probe runs").0)
        .collect()
}

#[test]
fn a_pooled_instance_carries_nothing_from_the_last_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sandbox = Sandbox::new(dir.path().join("cache")).expect("sandbox");
    let engine = sandbox.engine();
    let component = Component::new(engine, carry_state()).expect("the fixture compiles");
    let pre = Linker::<()>::new(engine)
        .instantiate_pre(&component)
        .expect("links");

    // The probe sees what it left when it is still there: within one instance it finds
    // every trace.
    assert_eq!(probe(engine, &pre, 2), vec![0, ALL_TRACES]);

    // Each new instance, in a slot the last one used, finds none.
    for call in 0..8 {
        let seen = probe(engine, &pre, 1)[0];
        assert_eq!(
            seen, 0,
            "instance {call} found traces of an earlier one: {seen:#010x}"
        );
    }
}
