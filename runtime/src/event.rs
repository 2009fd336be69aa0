//! The vocabulary of what a session records and reports, so an embedder can name every value
//! it is handed: an [`Event`](crate::Event)'s body and everything in it (calls, usage, repairs,
//! approvals, the model's settings), the messages of a conversation, and what a model stream
//! delivers to an [`Observer`](crate::Observer). Data only; the types live with the modules
//! that make them and are re-exported here.

pub use crate::calls::{Disposition, EndReason, Repair};
pub use crate::log::{
    Asked, Body, ChildSpent, CompactReason, ForkLink, InstructionRecord, LayerRecord, LoggedRepair,
    ParentLink, PluginHash, PresetSwitch, SkillsRecord, Touches,
};
pub use crate::model::price::Price;
pub use crate::model::{
    AssembledCall, AssistantMessage, AttemptId, AttemptStatus, CacheTtl, Delta, Diagnostic, Finish,
    ImageError, ImageKind, ImagePart, ImageRef, MaxTokensField, Message, ModelEvent, Outcome,
    PartialOutput, ProviderConfig, ProviderKind, Reasoning, RetryPolicy, ToolCall, ToolChoice,
    ToolResultMessage, Usage,
};
pub use crate::preset::Origin;
