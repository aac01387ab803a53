//! Which frames of a call stack matter to a reader.
//!
//! PyTorch records stacks innermost first. With `stacks="all"` they interleave Python
//! frames with C++ ones, many of which are the machinery of recording itself (the
//! unwinder), of the interpreter (`_PyEval_EvalFrameDefault`, `*_vectorcall`) or of the
//! process (`_start`, `__libc_start_main`). Those are *noise*: hidden by default.
//!
//! The *call site* of an allocation ([`call_site`]) is its innermost frame of the
//! user's own code: it names what allocated the memory, colours the timeline and groups
//! the lenses, the fleet reports, compare, the anomalies and the CLI, which all call
//! this one function. Frames are sorted into [`FrameKind`]s by their file and name
//! alone, and the rules that pick a frame are the [`SiteRule`]s, in order. Allocations
//! without a stack share one label, [`NO_STACK_LABEL`].

use crate::intern::{FrameId, StackId, NO_LINE};
use crate::model::Snapshot;

/// Substrings of C/C++ function names that are recording, interpreter or process
/// machinery.
const NOISE_NAMES: &[&str] = &[
    "torch::unwind::",
    "CapturedTraceback",
    "gather_with_cpp",
    "_PyEval_",
    "PyEval_",
    "_PyObject_",
    "PyObject_",
    "_PyFunction_",
    "_PyRun_",
    "PyRun_",
    "Py_RunMain",
    "Py_BytesMain",
    "pymain_",
    "pyrun_",
    "run_eval_code",
    "run_mod",
    "vectorcall",
    "slot_tp_",
    "cfunction_call",
    "_PyVectorcall",
    "PyVectorcall",
    "_PyCFunction",
    "PyCFunction",
    "__libc_start",
    "__libc_init",
    "_start",
    "_Py_",
];

/// Substrings of C++ names that are the allocator's and dispatcher's own plumbing: a
/// stack with no Python frame is labelled by the first frame past them (the operator).
const PLUMBING_NAMES: &[&str] = &[
    "CUDACachingAllocator",
    "c10::cuda::",
    "c10::impl::",
    "c10::Dispatcher",
    "c10::StorageImpl",
    "c10::TensorImpl",
    "c10::intrusive_ptr",
    "at::detail::",
    "at::_ops::",
    "at::empty",
    "at::native::empty",
    "at::TensorBase",
    "at::TensorIterator",
    "at::meta::",
    "at::native::resize_",
    "torch::autograd::VariableType",
    "at::(anonymous namespace)::",
    "wrap_kernel_functor",
    "wrapper_CUDA",
    "create_out",
    "set_output",
    "THPVariable_",
];

/// The label of allocations recorded without a call stack, in every view and report.
pub const NO_STACK_LABEL: &str = "(no call stack)";

/// Path fragments of installed packages (never the user's code).
const PACKAGE_DIRS: &[&str] = &["site-packages", "dist-packages"];

/// Directory prefix of code that torch generates while compiling (Inductor's output,
/// `/tmp/torchinductor_<user>/…`): torch's code, though it lives in no package.
const GENERATED_DIR_PREFIX: &str = "torchinductor_";

/// Pseudo-file prefixes of code torch generates (torch.fx's `<eval_with_key>.N`).
const GENERATED_PSEUDO_FILES: &[&str] = &["<eval_with_key>"];

/// Entries right under a `torch/` directory that make it torch's own source (a source
/// checkout or an editable install: `pytorch/torch/nn/modules/module.py`). A user's own
/// folder named `torch` (`~/torch/trace_peak_memory.py`) has none of these.
const TORCH_ENTRIES: &[&str] = &[
    "__init__.py",
    "_C",
    "_compile.py",
    "_decomp",
    "_dynamo",
    "_functorch",
    "_guards.py",
    "_higher_order_ops",
    "_inductor",
    "_jit_internal.py",
    "_library",
    "_ops.py",
    "_prims",
    "_refs",
    "_subclasses",
    "_tensor.py",
    "_utils.py",
    "amp",
    "ao",
    "autograd",
    "backends",
    "compiler",
    "cuda",
    "distributed",
    "export",
    "functional.py",
    "fx",
    "jit",
    "library.py",
    "nn",
    "optim",
    "overrides.py",
    "profiler",
    "random.py",
    "serialization.py",
    "sparse",
    "storage.py",
    "testing",
    "utils",
];

/// What a frame is, for choosing the call site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// Recording, interpreter or process machinery (hidden by default).
    Noise,
    /// C or C++ (no `.py` file).
    Cpp,
    /// The Python standard library (`…/lib/python3.12/…`, `…\Lib\…` on Windows).
    Stdlib,
    /// Torch itself (installed or a source checkout, and the code it generates) or
    /// another installed package (`site-packages`, `dist-packages`).
    Package,
    /// The user's own Python code: everything else that is Python.
    User,
}

/// Which rule chose a stack's call site, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiteRule {
    /// The innermost frame of the user's own code.
    UserCode,
    /// No frame of the user's code: the innermost Python frame (torch, a package or the
    /// standard library).
    Python,
    /// No Python frame (autograd's backward thread): the autograd node that ran.
    AutogradNode,
    /// No Python frame: the innermost C++ frame past the allocator's and dispatcher's
    /// plumbing (the operator).
    Operator,
    /// Only plumbing and machinery: the innermost frame that is not noise, else the
    /// first frame.
    Innermost,
}

impl SiteRule {
    /// Why this frame was chosen, in words for the detail panel.
    pub fn reason(self) -> &'static str {
        match self {
            SiteRule::UserCode => {
                "the innermost frame of your own code (C++, torch, installed packages and \
                 the Python standard library skipped)"
            }
            SiteRule::Python => {
                "no frame of your own code: the innermost Python frame (torch, a package \
                 or the standard library)"
            }
            SiteRule::AutogradNode => {
                "no Python frame (autograd's backward thread): the autograd node that ran"
            }
            SiteRule::Operator => {
                "no Python frame: the innermost C++ frame past the allocator's and \
                 dispatcher's plumbing"
            }
            SiteRule::Innermost => {
                "only allocator plumbing and interpreter frames: the innermost of them"
            }
        }
    }
}

/// The call site of a stack and the rule that chose it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The chosen frame.
    pub frame: FrameId,
    /// Why it was chosen.
    pub rule: SiteRule,
}

/// Whether a frame is Python code (a `.py` file or a `<…>` pseudo-file such as
/// `<eval_with_key>.3` from torch.fx).
pub fn is_python(snap: &Snapshot, frame: FrameId) -> bool {
    let filename = snap.strings.get(snap.frames.filename[frame.0 as usize]);
    filename.ends_with(".py") || filename.starts_with('<')
}

/// Whether a frame is recording, interpreter or process machinery (hidden by default).
pub fn is_noise(snap: &Snapshot, frame: FrameId) -> bool {
    let i = frame.0 as usize;
    let filename = snap.strings.get(snap.frames.filename[i]);
    if filename.starts_with("<frozen ") {
        return true;
    }
    if is_python(snap, frame) {
        return false;
    }
    let name = snap.strings.get(snap.frames.name[i]);
    NOISE_NAMES.iter().any(|n| name.contains(n))
}

/// What a Python file is, from its path alone (either separator).
fn python_file_kind(filename: &str) -> FrameKind {
    if GENERATED_PSEUDO_FILES
        .iter()
        .any(|p| filename.starts_with(p))
    {
        return FrameKind::Package;
    }
    let parts: Vec<&str> = filename.split(['/', '\\']).collect();
    // Directories only: the last part is the file.
    let dirs = &parts[..parts.len().saturating_sub(1)];
    for (i, dir) in dirs.iter().enumerate() {
        if PACKAGE_DIRS.contains(dir) || dir.starts_with(GENERATED_DIR_PREFIX) {
            return FrameKind::Package;
        }
        if *dir == "torch" && parts.get(i + 1).is_some_and(|e| TORCH_ENTRIES.contains(e)) {
            return FrameKind::Package;
        }
    }
    // The standard library: `lib/python3.12/` (`lib64` on some distributions), or
    // `Lib\` of a Windows installation; packages inside it were caught above.
    let stdlib = dirs.windows(2).any(|w| {
        (w[0] == "lib" || w[0] == "lib64")
            && w[1]
                .strip_prefix("python")
                .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
    }) || dirs.contains(&"Lib");
    if stdlib {
        FrameKind::Stdlib
    } else {
        FrameKind::User
    }
}

/// What a frame is.
pub fn frame_kind(snap: &Snapshot, frame: FrameId) -> FrameKind {
    if is_noise(snap, frame) {
        return FrameKind::Noise;
    }
    if !is_python(snap, frame) {
        return FrameKind::Cpp;
    }
    python_file_kind(snap.strings.get(snap.frames.filename[frame.0 as usize]))
}

/// Whether a C++ frame is allocator or dispatcher plumbing (never a useful call site).
fn is_plumbing(snap: &Snapshot, frame: FrameId) -> bool {
    let name = snap.strings.get(snap.frames.name[frame.0 as usize]);
    // The function's own name (and return type), not its parameter types: an operator
    // taking an `at::TensorBase const&` is no plumbing.
    let parameters = name
        .match_indices('(')
        .map(|(i, _)| i)
        .find(|&i| !name[i..].starts_with("(anonymous namespace)"))
        .unwrap_or(name.len());
    let function = &name[..parameters];
    PLUMBING_NAMES.iter().any(|n| function.contains(n))
}

/// Whether a C++ frame is an autograd node running in the backward pass
/// (`torch::autograd::generated::MmBackward0::apply(…)`).
fn is_autograd_node(snap: &Snapshot, frame: FrameId) -> bool {
    let name = snap.strings.get(snap.frames.name[frame.0 as usize]);
    name.contains("torch::autograd::generated::") && name.contains("::apply(")
}

/// What choosing a call site needs to know of one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FrameClass {
    kind: FrameKind,
    autograd_node: bool,
    plumbing: bool,
}

fn classify(snap: &Snapshot, frame: FrameId) -> FrameClass {
    let kind = frame_kind(snap, frame);
    FrameClass {
        kind,
        autograd_node: is_autograd_node(snap, frame),
        plumbing: kind == FrameKind::Cpp && is_plumbing(snap, frame),
    }
}

/// Every frame of a snapshot classified once, for choosing the call sites of many
/// stacks: the rules search frame names for substrings, and a frame appears in many
/// stacks, so classifying per stack repeated the searches for each (3 % of a load's
/// time in WebAssembly).
#[derive(Clone, Debug)]
pub struct FrameClasses {
    class: Vec<FrameClass>,
}

impl FrameClasses {
    /// Classifies every frame of `snap`.
    pub fn new(snap: &Snapshot) -> FrameClasses {
        FrameClasses {
            class: (0..snap.frames.len() as u32)
                .map(|i| classify(snap, FrameId(i)))
                .collect(),
        }
    }

    /// [`call_site`] of `stack`, from the classes.
    pub fn call_site(&self, snap: &Snapshot, stack: StackId) -> Option<CallSite> {
        let frames = snap.stacks.get(stack);
        pick_site(frames, |i| self.class[frames[i].0 as usize])
    }
}

/// The call site of a stack, tried in the order of [`SiteRule`]: its innermost frame
/// of the user's own code; else its innermost Python frame; else (no Python frame, e.g.
/// autograd's backward thread) the innermost autograd node, else the innermost C++
/// frame past the allocator's and dispatcher's plumbing; else its innermost frame that
/// is not noise, else its first frame. `None` for an empty stack. (For many stacks,
/// [`FrameClasses::call_site`] classifies each frame once.)
pub fn call_site(snap: &Snapshot, stack: StackId) -> Option<CallSite> {
    let frames = snap.stacks.get(stack);
    let classes: Vec<FrameClass> = frames.iter().map(|&f| classify(snap, f)).collect();
    pick_site(frames, |i| classes[i])
}

/// The rules of [`call_site`] on `frames`, whose `i`th frame's class is `class(i)`.
fn pick_site(frames: &[FrameId], class: impl Fn(usize) -> FrameClass) -> Option<CallSite> {
    let first = |rule: SiteRule, pick: &dyn Fn(FrameClass) -> bool| {
        (0..frames.len())
            .find(|&i| pick(class(i)))
            .map(|i| CallSite {
                frame: frames[i],
                rule,
            })
    };
    first(SiteRule::UserCode, &|c| c.kind == FrameKind::User)
        .or_else(|| {
            first(SiteRule::Python, &|c| {
                matches!(c.kind, FrameKind::Package | FrameKind::Stdlib)
            })
        })
        .or_else(|| first(SiteRule::AutogradNode, &|c| c.autograd_node))
        .or_else(|| {
            first(SiteRule::Operator, &|c| {
                c.kind == FrameKind::Cpp && !c.plumbing
            })
        })
        .or_else(|| first(SiteRule::Innermost, &|c| c.kind != FrameKind::Noise))
        .or_else(|| first(SiteRule::Innermost, &|_| true))
}

/// The call-site label of a stack: [`short_label`] of its [`call_site`], or
/// [`NO_STACK_LABEL`] for an empty stack. Every view and report labels sites with this.
pub fn site_label(snap: &Snapshot, stack: StackId) -> String {
    match call_site(snap, stack) {
        Some(site) => short_label(snap, site.frame),
        None => NO_STACK_LABEL.to_owned(),
    }
}

/// `name (file:line)` with the file shortened to its base name, for legends and labels.
pub fn short_label(snap: &Snapshot, frame: FrameId) -> String {
    let i = frame.0 as usize;
    let filename = snap.strings.get(snap.frames.filename[i]);
    let base = filename.rsplit(['/', '\\']).next().unwrap_or(filename);
    let name = snap.strings.get(snap.frames.name[i]);
    let line = snap.frames.line[i];
    if base.is_empty() || base == "??" {
        name.to_owned()
    } else if line > 0 && line < (1 << 63) {
        format!("{name} ({base}:{line})")
    } else {
        format!("{name} ({base})")
    }
}

/// `filename:line name` in full, for stacks shown and copied (`filename name` for a
/// frame without line).
pub fn full_label(snap: &Snapshot, frame: FrameId) -> String {
    let i = frame.0 as usize;
    let filename = snap.strings.get(snap.frames.filename[i]);
    let name = snap.strings.get(snap.frames.name[i]);
    match snap.frames.line[i] {
        NO_LINE => format!("{filename} {name}"),
        line => format!("{filename}:{line} {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load_bytes;

    /// A snapshot with one allocation whose stack is `frames`, innermost first.
    fn snapshot_with(frames: &[(&str, u32, &str)]) -> Snapshot {
        let frames: Vec<String> = frames
            .iter()
            .map(|(file, line, name)| {
                let file = file.replace('\\', "\\\\");
                format!(r#"{{"filename": "{file}", "line": {line}, "name": "{name}"}}"#)
            })
            .collect();
        let json = format!(
            r#"{{"segments": [], "device_traces": [[{{"action": "alloc", "addr": 1, "size": 2,
                "stream": 0, "frames": [{}]}}]]}}"#,
            frames.join(",")
        );
        load_bytes(json.as_bytes()).unwrap()
    }

    /// The label and the rule of the call site of the one allocation of `frames`.
    fn site(frames: &[(&str, u32, &str)]) -> (String, SiteRule) {
        let snap = snapshot_with(frames);
        let site = call_site(&snap, snap.events.stack[0]).unwrap();
        (short_label(&snap, site.frame), site.rule)
    }

    /// The allocator's plumbing of a real entry (forward-fp32, fullstep-19k).
    const MALLOC: &[(&str, u32, &str)] = &[
        ("??", 0, "torch::unwind::unwind()"),
        (
            "??",
            0,
            "torch::CapturedTraceback::gather(bool, bool, bool)",
        ),
        (
            "CUDACachingAllocator.cpp",
            0,
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char)",
        ),
        (
            "",
            0,
            "at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>)",
        ),
        (
            "??",
            0,
            "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)",
        ),
        (
            "RegisterCUDA.cpp",
            0,
            "at::(anonymous namespace)::create_out(c10::ArrayRef<long>)",
        ),
    ];

    /// The rest of a bmm under einsum, as in forward-fp32: the meta function that
    /// allocates the output, the dispatcher, then torch's and einops' Python frames.
    const EINSUM: &[(&str, u32, &str)] = &[
        (
            "",
            0,
            "void at::meta::common_checks_baddbmm_bmm<at::meta::structured_bmm>(at::meta::structured_bmm&)",
        ),
        ("??", 0, "at::meta::structured_bmm::meta(at::Tensor const&, at::Tensor const&)"),
        ("RegisterCUDA.cpp", 0, "at::(anonymous namespace)::wrapper_CUDA_bmm(at::Tensor const&)"),
        ("??", 0, "at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)"),
        ("Linear.cpp", 0, "at::native::sumproduct_pair(at::Tensor const&)"),
        ("??", 0, "at::native::einsum(std::basic_string_view<char>)"),
        ("??", 0, "at::_ops::einsum::call(std::basic_string_view<char>)"),
        (
            "python_torch_functions_0.cpp",
            0,
            "torch::autograd::THPVariable_einsum(_object*, _object*, _object*)",
        ),
        ("/usr/local/src/conda/python-3.12.3/Objects/methodobject.c", 537, "cfunction_call"),
        ("/env/lib/python3.12/site-packages/torch/functional.py", 407, "einsum"),
        ("??", 0, "_PyEval_EvalFrameDefault"),
        ("/env/lib/python3.12/site-packages/einops/_backends.py", 288, "einsum"),
        ("??", 0, "__libc_start_main"),
        ("??", 0, "_start"),
    ];

    fn stack(
        parts: &[&[(&'static str, u32, &'static str)]],
    ) -> Vec<(&'static str, u32, &'static str)> {
        parts.concat()
    }

    #[test]
    fn python_only_stacks_name_the_innermost_frame_of_your_code() {
        // external-annotations / win-paths shape: Python frames only.
        let (label, rule) = site(&[
            (
                "/env/lib/python3.12/site-packages/torch/nn/functional.py",
                2100,
                "linear",
            ),
            ("/usr/lib/python3.12/contextlib.py", 81, "inner"),
            ("/home/me/model.py", 15, "forward"),
            (
                "/env/lib/python3.12/site-packages/torch/nn/modules/module.py",
                1750,
                "_call_impl",
            ),
            ("/home/me/train.py", 40, "<module>"),
        ]);
        assert_eq!(
            (label.as_str(), rule),
            ("forward (model.py:15)", SiteRule::UserCode)
        );
    }

    #[test]
    fn an_einsum_under_your_attention_is_labelled_with_your_frame() {
        // The issue's example: a 512 MiB einsum labelled
        // `void at::meta::common_checks_baddbmm_bmm<…>` although its stack holds
        // `custom_scaled_dot_product_attention (trace_peak_memory.py:12)`. PyTorch
        // appends the Python frames it could not interleave after `_start`.
        let user: &[(&str, u32, &str)] = &[
            (
                "/env/lib/python3.12/site-packages/einops/einops.py",
                916,
                "einsum",
            ),
            (
                "/home/me/torch/trace_peak_memory.py",
                12,
                "custom_scaled_dot_product_attention",
            ),
            ("/home/me/torch/trace_peak_memory.py", 30, "<module>"),
        ];
        let (label, rule) = site(&stack(&[MALLOC, EINSUM, user]));
        assert_eq!(
            label,
            "custom_scaled_dot_product_attention (trace_peak_memory.py:12)"
        );
        assert_eq!(rule, SiteRule::UserCode);
        // The same script in a folder named `lib/python_tools` or run from the current
        // directory is still the user's.
        for file in [
            "/srv/lib/python_tools/trace_peak_memory.py",
            "trace_peak_memory.py",
        ] {
            let user: &[(&str, u32, &str)] = &[(file, 12, "custom_scaled_dot_product_attention")];
            let (label, _) = site(&stack(&[MALLOC, EINSUM, user]));
            assert_eq!(
                label,
                "custom_scaled_dot_product_attention (trace_peak_memory.py:12)"
            );
        }
    }

    #[test]
    fn without_your_code_the_innermost_python_frame_names_it() {
        let (label, rule) = site(&stack(&[MALLOC, EINSUM]));
        assert_eq!(
            (label.as_str(), rule),
            ("einsum (functional.py:407)", SiteRule::Python)
        );
        let (label, rule) = site(&[
            ("??", 0, "_PyEval_EvalFrameDefault"),
            ("<frozen runpy>", 88, "_run_code"),
            ("/usr/lib/python3.12/threading.py", 1010, "run"),
        ]);
        assert_eq!(
            (label.as_str(), rule),
            ("run (threading.py:1010)", SiteRule::Python)
        );
    }

    #[test]
    fn cpp_only_stacks_name_the_autograd_node_or_the_operator() {
        // fullstep-19k: allocations of autograd's backward thread carry no Python frame;
        // the issue saw them labelled `at::meta::common_checks_baddbmm_bmm<…>` and
        // `at::TensorIteratorBase::allocate_or_resize_outputs()`.
        let thread: &[(&str, u32, &str)] = &[
            ("", 0, "torch::autograd::Node::operator()(std::vector<at::Tensor>&&)"),
            ("??", 0, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
            ("thread48.o", 0, "execute_native_thread_routine"),
        ];
        let bmm: &[(&str, u32, &str)] = &[
            (
                "??",
                0,
                "at::_ops::bmm::redispatch(c10::DispatchKeySet, at::Tensor const&)",
            ),
            (
                "VariableType_3.cpp",
                0,
                "torch::autograd::VariableType::(anonymous namespace)::bmm(c10::DispatchKeySet)",
            ),
            (
                "??",
                0,
                "at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)",
            ),
            (
                "??",
                0,
                "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)",
            ),
        ];
        let (label, rule) = site(&stack(&[MALLOC, &EINSUM[..3], bmm, thread]));
        assert_eq!(
            (label.as_str(), rule),
            (
                "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)",
                SiteRule::AutogradNode
            )
        );
        // No autograd node (a C++ program): the operator past the plumbing.
        let div: &[(&str, u32, &str)] = &[
            (
                "??",
                0,
                "at::TensorIteratorBase::allocate_or_resize_outputs()",
            ),
            (
                "??",
                0,
                "at::TensorIteratorBase::build(at::TensorIteratorConfig&)",
            ),
            (
                "RegisterCUDA.cpp",
                0,
                "at::(anonymous namespace)::wrapper_CUDA_div_Tensor(at::Tensor const&)",
            ),
            (
                "??",
                0,
                "at::_ops::div_Tensor::call(at::Tensor const&, at::Tensor const&)",
            ),
            (
                "??",
                0,
                "at::native::div(at::TensorBase const&, c10::Scalar const&)",
            ),
            ("main.cpp", 20, "main"),
        ];
        let (label, rule) = site(&stack(&[MALLOC, div]));
        assert_eq!(
            (label.as_str(), rule),
            (
                "at::native::div(at::TensorBase const&, c10::Scalar const&)",
                SiteRule::Operator
            )
        );
        // Only plumbing and machinery: the innermost frame that is not noise.
        let (label, rule) = site(&[("??", 0, "_start"), ("alloc.cpp", 0, "at::empty")]);
        assert_eq!(
            (label.as_str(), rule),
            ("at::empty (alloc.cpp)", SiteRule::Innermost)
        );
        let (label, rule) = site(&[("??", 0, "_start")]);
        assert_eq!((label.as_str(), rule), ("_start", SiteRule::Innermost));
    }

    #[test]
    fn windows_paths_are_sorted_like_posix_ones() {
        // win-paths-compile-context: a venv on Windows.
        let (label, rule) = site(&[
            (r"C:\Python312\Lib\contextlib.py", 81, "inner"),
            (
                r"D:\proj\.venv\Lib\site-packages\torch\nn\modules\module.py",
                1750,
                "_call_impl",
            ),
            (r"D:\proj\cs336_basics\model.py", 101, "forward"),
        ]);
        assert_eq!(
            (label.as_str(), rule),
            ("forward (model.py:101)", SiteRule::UserCode)
        );
    }

    #[test]
    fn code_torch_generates_while_compiling_is_torchs() {
        // forward-segment-free: Inductor's generated `call` sits inside the user's
        // frames that it was compiled from.
        let (label, rule) = site(&[
            (
                "guards.cpp",
                0,
                "torch::dynamo::(anonymous namespace)::_empty_strided_device(_object*)",
            ),
            (
                "/tmp/torchinductor_me/kb/ckbfydn2m64lvgma55vodrvsjl.py",
                1284,
                "call",
            ),
            ("/home/me/cs336_basics/transformer.py", 205, "forward"),
            (
                "/env/lib/python3.12/site-packages/torch/_inductor/utils.py",
                2128,
                "run",
            ),
        ]);
        assert_eq!(
            (label.as_str(), rule),
            ("forward (transformer.py:205)", SiteRule::UserCode)
        );
        let (label, _) = site(&[
            ("<eval_with_key>.3", 9, "forward"),
            ("/home/me/model.py", 7, "forward"),
        ]);
        assert_eq!(label, "forward (model.py:7)");
    }

    #[test]
    fn frame_kinds_of_paths() {
        let cases = [
            ("/home/me/model.py", FrameKind::User),
            ("model.py", FrameKind::User),
            ("<stdin>", FrameKind::User),
            ("/tmp/ipykernel_123/2130.py", FrameKind::User),
            ("/home/me/torch/trace_peak_memory.py", FrameKind::User),
            ("/home/me/torch/experiments/run.py", FrameKind::User),
            ("/home/me/lib/python_tools/run.py", FrameKind::User),
            (
                "/mnt/proj/lib/transformers/models/bert/modeling_bert.py",
                FrameKind::User,
            ),
            ("/usr/lib/python3.12/contextlib.py", FrameKind::Stdlib),
            ("/usr/lib64/python3.9/threading.py", FrameKind::Stdlib),
            (r"C:\Python312\Lib\runpy.py", FrameKind::Stdlib),
            (
                "/usr/lib/python3/dist-packages/numpy/core.py",
                FrameKind::Package,
            ),
            (
                "/env/lib/python3.12/site-packages/einops/einops.py",
                FrameKind::Package,
            ),
            (
                r"D:\venv\Lib\site-packages\torch\functional.py",
                FrameKind::Package,
            ),
            (
                "/src/pytorch/torch/nn/modules/module.py",
                FrameKind::Package,
            ),
            ("/src/pytorch/torch/_tensor.py", FrameKind::Package),
            ("/tmp/torchinductor_me/kb/ckb.py", FrameKind::Package),
            ("<eval_with_key>.12", FrameKind::Package),
        ];
        for (file, kind) in cases {
            assert_eq!(python_file_kind(file), kind, "{file}");
        }
    }

    #[test]
    fn noise_is_hidden_and_an_empty_stack_has_no_site() {
        let snap = snapshot_with(&stack(&[MALLOC, &[("/home/me/model.py", 3, "f")]]));
        let noisy: Vec<bool> = snap
            .stacks
            .get(snap.events.stack[0])
            .iter()
            .map(|&f| is_noise(&snap, f))
            .collect();
        assert_eq!(noisy, [true, true, false, false, false, false, false]);
        let snap = snapshot_with(&[]);
        assert_eq!(call_site(&snap, snap.events.stack[0]), None);
        assert_eq!(site_label(&snap, snap.events.stack[0]), NO_STACK_LABEL);
    }
}
