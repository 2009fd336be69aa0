// carry_state_js: a hostile tool in JavaScript (built like the example, by componentize-js)
// that tries to carry state from one call to the next, in every place a script can keep it:
// a module variable, an array on the global object, and a property on Object.prototype.
// Like the example, it calls itself once at build time, inside the snapshot componentize-js
// makes. paddock snapshots it again after its warm-up (it imports only `log` and `types`):
// one `list` call, which counts too, and one call of its one correct example, which it counts
// apart. Every call starts from that snapshot, so each call must find exactly the build-time
// call's traces, the snapshot's `list` and example, and its own call; never an earlier call,
// nor the `list` a load makes.
const NAME = "carry_state_js";

let calls = 0;
let examples = 0;
let lists = 0;
globalThis.carried = [];

export const tools = {
  list() {
    lists += 1;
    Object.prototype.carriedLists = (Object.prototype.carriedLists || 0) + 1;
    return [
      {
        name: NAME,
        description: "Counts the calls it can still see; a test expects only its own.",
        parameters: JSON.stringify({
          type: "object",
          properties: { from: { type: "string" } },
          additionalProperties: false,
        }),
        examples: [{ args: '{"from": "example"}', correct: true, note: "the warm-up's call" }],
        readOnly: true,
        concurrencySafe: true,
        idempotent: true,
        cancellable: true,
        risk: "low",
        outputBudget: undefined,
        pathParams: [],
      },
    ];
  },

  call(name, args) {
    calls += 1;
    if (args.includes('"example"')) {
      examples += 1;
    }
    globalThis.carried.push(args);
    Object.prototype.carriedCalls = (Object.prototype.carriedCalls || 0) + 1;
    return {
      content: `module ${calls} (examples ${examples}), global ${globalThis.carried.length}, prototype ${({}).carriedCalls}, lists ${lists} (prototype ${({}).carriedLists || 0})`,
      truncated: false,
      continuation: undefined,
    };
  },
};

tools.call(NAME, "{}");
