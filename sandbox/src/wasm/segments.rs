//! Fewer data segments in a snapshot (issue 43; docs/wasm-speed.md). Wizer writes a snapshot's
//! memory as one active data segment per run of non-zero bytes, up to 10,000 of them, and
//! wasmtime sets up every data segment of a module at each instantiation (a base and a length
//! in the instance's context, then the start-up code's pass over them), whether or not the
//! memory comes from a copy-on-write image: for a JavaScript tool that was ~40% of a call that
//! does nothing. Merging segments that lie close together in one memory leaves the memory's
//! initial contents byte for byte the same (the gaps are zeros, which memory starts as).
//!
//! Only a module whose active segments are at constant offsets, do not overlap, and all come
//! after its passive ones is rewritten: a passive segment is addressed by its index
//! (`memory.init`), and keeps it, and overlapping segments would depend on their order. An
//! index of an active segment that a `data.drop` or a `memory.init` names refers to a segment
//! already dropped at instantiation, before and after the merge alike; an index past the new
//! count fails validation, and the snapshot is then compiled unmerged (`snapshot.rs`). (The
//! JavaScript runtime has passive segments ahead of the snapshot's active ones.)

use std::convert::Infallible;

use wasm_encoder::reencode::{Error, Reencode, ReencodeComponent, component_utils, utils};
use wasm_encoder::{ConstExpr, DataSection};

/// Segments of one memory this close (in bytes) are merged, the zeros between them included.
/// A wasm page: the copy-on-write image that wasmtime maps is made of whole pages anyway.
const MERGE_GAP: u64 = 64 << 10;

/// Most zero bytes merging may add to one module. A module can place tiny segments a gap
/// apart across 4 GiB in half a megabyte of its own; without a bound, merging them would
/// allocate all of it. A snapshot's segments lie within the memory `list` left (at most
/// `list_limits`' 128 MiB), and the JavaScript runtime's gaps add a few MiB.
const MAX_FILL: u64 = 64 << 20;

/// The data segments of the rewritten module: its passive ones unchanged, in their order, then
/// its active ones merged.
struct Plan {
    passive: Vec<Vec<u8>>,
    active: Vec<Segment>,
}

/// One active data segment.
struct Segment {
    memory: u32,
    offset: u64,
    memory64: bool,
    bytes: Vec<u8>,
}

/// The component `wasm` with the data segments of each of its core modules merged where
/// that keeps the memory's contents the same; `None` when no module has any to merge or the
/// component cannot be re-encoded.
pub(crate) fn merge_data_segments(wasm: &[u8]) -> Option<Vec<u8>> {
    let mut merger = Merger {
        plan: None,
        merged_any: false,
    };
    let mut component = wasm_encoder::Component::new();
    merger
        .parse_component(&mut component, wasmparser::Parser::new(0), wasm)
        .ok()?;
    merger.merged_any.then(|| component.finish())
}

/// Re-encodes a component unchanged except for the data section of each core module that has
/// a merge plan.
struct Merger {
    /// The segments of the module being re-encoded, when it has any to merge.
    plan: Option<Plan>,
    merged_any: bool,
}

impl Reencode for Merger {
    type Error = Infallible;

    fn data_count(&mut self, count: u32) -> Result<u32, Error<Infallible>> {
        Ok(match &self.plan {
            Some(plan) => (plan.passive.len() + plan.active.len()) as u32,
            None => count,
        })
    }

    fn parse_data_section(
        &mut self,
        data: &mut DataSection,
        section: wasmparser::DataSectionReader<'_>,
    ) -> Result<(), Error<Infallible>> {
        let Some(plan) = &self.plan else {
            return utils::parse_data_section(self, data, section);
        };
        for bytes in &plan.passive {
            data.passive(bytes.iter().copied());
        }
        for segment in &plan.active {
            let offset = if segment.memory64 {
                ConstExpr::i64_const(segment.offset as i64)
            } else {
                ConstExpr::i32_const(segment.offset as u32 as i32)
            };
            data.active(segment.memory, &offset, segment.bytes.iter().copied());
        }
        Ok(())
    }
}

impl ReencodeComponent for Merger {
    fn parse_component_submodule(
        &mut self,
        component: &mut wasm_encoder::Component,
        parser: wasmparser::Parser,
        module: &[u8],
    ) -> Result<(), Error<Infallible>> {
        self.plan = merge_plan(module);
        self.merged_any |= self.plan.is_some();
        let reencoded = component_utils::parse_component_submodule(self, component, parser, module);
        self.plan = None;
        reencoded
    }
}

/// The segments of core module `module` with its active ones merged, when they are all at
/// constant offsets, none overlap, none comes before a passive one, and merging leaves fewer.
fn merge_plan(module: &[u8]) -> Option<Plan> {
    let mut passive = Vec::new();
    let mut segments = Vec::new();
    let mut names_data = false;
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        let payload = payload.ok()?;
        if let wasmparser::Payload::CodeSectionEntry(body) = &payload {
            names_data |= names_a_data_segment(body)?;
        }
        if let wasmparser::Payload::DataSection(section) = payload {
            for datum in section {
                let datum = datum.ok()?;
                if matches!(datum.kind, wasmparser::DataKind::Passive) {
                    if !segments.is_empty() {
                        return None;
                    }
                    passive.push(datum.data.to_vec());
                } else {
                    segments.push(active_segment(datum)?);
                }
            }
        }
    }
    let count = segments.len();
    segments.sort_by_key(|s| (s.memory, s.offset));
    let mut merged: Vec<Segment> = Vec::with_capacity(count);
    let mut filled = 0u64;
    for segment in segments {
        if let Some(last) = merged.last_mut()
            && last.memory == segment.memory
        {
            let end = last.offset + last.bytes.len() as u64;
            if segment.offset < end {
                return None;
            }
            let gap = segment.offset - end;
            if gap <= MERGE_GAP {
                filled += gap;
                if filled > MAX_FILL {
                    return None;
                }
                last.bytes
                    .resize((segment.offset - last.offset) as usize, 0);
                last.bytes.extend_from_slice(&segment.bytes);
                continue;
            }
        }
        merged.push(segment);
    }
    // No instruction names a data segment: the passive ones can never be read, and go (Wizer
    // turns the segments a component had into passive ones, unread, beside its snapshot's).
    if !names_data {
        passive.clear();
    }
    (merged.len() < count).then_some(Plan {
        passive,
        active: merged,
    })
}

/// Whether `body` has an instruction that names a data segment by its index.
fn names_a_data_segment(body: &wasmparser::FunctionBody<'_>) -> Option<bool> {
    let mut operators = body.get_operators_reader().ok()?;
    while !operators.eof() {
        if matches!(
            operators.read().ok()?,
            wasmparser::Operator::MemoryInit { .. }
                | wasmparser::Operator::DataDrop { .. }
                | wasmparser::Operator::ArrayNewData { .. }
                | wasmparser::Operator::ArrayInitData { .. }
        ) {
            return Some(true);
        }
    }
    Some(false)
}

/// `datum` as an active segment at a constant offset; `None` for any other.
fn active_segment(datum: wasmparser::Data<'_>) -> Option<Segment> {
    let wasmparser::DataKind::Active {
        memory_index,
        offset_expr,
    } = datum.kind
    else {
        return None;
    };
    let mut operators = offset_expr.get_operators_reader();
    let (offset, memory64) = match operators.read().ok()? {
        wasmparser::Operator::I32Const { value } => (u64::from(value as u32), false),
        wasmparser::Operator::I64Const { value } => (value as u64, true),
        _ => return None,
    };
    if !matches!(operators.read().ok()?, wasmparser::Operator::End) {
        return None;
    }
    Some(Segment {
        memory: memory_index,
        offset,
        memory64,
        bytes: datum.data.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::merge_data_segments;

    /// Every byte of memory 0 after instantiating `wasm`'s one module, through the engine.
    fn memory_after_instantiation(wasm: &[u8]) -> Vec<u8> {
        let engine = wasmtime::Engine::new(wasmtime::Config::new().wasm_component_model(true))
            .expect("engine");
        let component = wasmtime::component::Component::new(&engine, wasm).expect("compiles");
        let mut store = wasmtime::Store::new(&engine, ());
        let linker = wasmtime::component::Linker::<()>::new(&engine);
        let instance = linker
            .instantiate(&mut store, &component)
            .expect("instantiates");
        let read = instance
            .get_typed_func::<(u32,), (u32,)>(&mut store, "read")
            .expect("exports read");
        (0..3 * 65536 / 4)
            .map(|i| read.call(&mut store, (i * 4,)).expect("reads").0)
            .flat_map(u32::to_le_bytes)
            .collect()
    }

    fn component(data: &str) -> Vec<u8> {
        wat::parse_str(format!(
            r#"(component
                (core module $m
                    (memory (export "memory") 3)
                    {data}
                    (func (export "read") (param i32) (result i32) local.get 0 i32.load))
                (core instance $i (instantiate $m))
                (func (export "read") (param "at" u32) (result u32)
                    (canon lift (core func $i "read"))))"#
        ))
        .expect("valid WAT")
    }

    #[test]
    fn close_segments_are_merged_and_the_memory_is_the_same_byte_for_byte() {
        // Out of order, with a gap of zeros, and one far away (past a page's gap).
        let wasm = component(
            r#"(data (i32.const 300) "\07\08")
               (data (i32.const 16) "\01\02\03")
               (data (i32.const 20) "\04")
               (data (i32.const 140000) "\09")"#,
        );
        let merged = merge_data_segments(&wasm).expect("there are segments to merge");
        assert_eq!(
            memory_after_instantiation(&merged),
            memory_after_instantiation(&wasm)
        );
        let segments = |wasm: &[u8]| {
            wasmparser::Parser::new(0)
                .parse_all(wasm)
                .filter_map(|p| match p.unwrap() {
                    wasmparser::Payload::DataSection(s) => Some(s.count()),
                    _ => None,
                })
                .sum::<u32>()
        };
        assert_eq!((segments(&wasm), segments(&merged)), (4, 2));
    }

    /// Each data segment of `wasm`'s modules: passive or not, and its bytes.
    fn kinds(wasm: &[u8]) -> Vec<(bool, Vec<u8>)> {
        let mut kinds = Vec::new();
        for payload in wasmparser::Parser::new(0).parse_all(wasm) {
            if let wasmparser::Payload::DataSection(section) = payload.unwrap() {
                for datum in section {
                    let datum = datum.unwrap();
                    let passive = matches!(datum.kind, wasmparser::DataKind::Passive);
                    kinds.push((passive, datum.data.to_vec()));
                }
            }
        }
        kinds
    }

    #[test]
    fn passive_segments_go_when_no_instruction_names_one_and_keep_their_index_when_one_does() {
        let data = r#"(data $p "\05\06") (data (i32.const 16) "\01") (data (i32.const 20) "\02")"#;
        let unread = component(data);
        let merged = merge_data_segments(&unread).expect("there are segments to merge");
        assert_eq!(
            memory_after_instantiation(&merged),
            memory_after_instantiation(&unread)
        );
        assert_eq!(kinds(&merged), vec![(false, vec![1, 0, 0, 0, 2])]);

        let read = component(&format!("{data} (func (export \"drop\") data.drop $p)"));
        let merged = merge_data_segments(&read).expect("there are segments to merge");
        assert_eq!(
            memory_after_instantiation(&merged),
            memory_after_instantiation(&read)
        );
        assert_eq!(
            kinds(&merged),
            vec![(true, vec![5, 6]), (false, vec![1, 0, 0, 0, 2])]
        );
    }

    #[test]
    fn a_module_with_a_passive_or_overlapping_segment_is_left_as_it_is() {
        let passive =
            component(r#"(data (i32.const 16) "\01") (data (i32.const 20) "\02") (data "\03")"#);
        assert!(merge_data_segments(&passive).is_none());
        let overlapping =
            component(r#"(data (i32.const 16) "\01\02\03") (data (i32.const 17) "\09")"#);
        assert!(merge_data_segments(&overlapping).is_none());
        // Segments a gap apart all across memory: merging them would fill gigabytes.
        let spread: String = (0..1100u64)
            .map(|i| format!(r#"(data (i32.const {}) "\01")"#, i * 65536))
            .collect();
        assert!(merge_data_segments(&component(&spread)).is_none());
        let one = component(r#"(data (i32.const 16) "\01")"#);
        assert!(merge_data_segments(&one).is_none());
    }
}
