//! End-to-end test support for paddock. `scripted` is the scripted model server every
//! end-to-end test talks to (SPEC M1: providers are tested through real HTTP on loopback).

pub mod scripted;
