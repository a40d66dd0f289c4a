"""The run-time check of an assignment whose answers may use torch only to allocate and launch.

Exercise 17 lets its answers import torch (its ``cases.py``'s ``ALLOWED_MODULES``) so that they
can hold arrays and launch a Triton kernel; the attention itself must be the kernel's. Names
checked in the source (:mod:`attngrade.staticcheck`) miss a function found at run time (a name
built from pieces, ``torch.ops.aten``, ``vars(F)``), and plain torch or NumPy arithmetic names
nothing forbidden at all. So, around each call of such an answer, the worker (:mod:`attngrade.worker`)

* records every ATen operator the call dispatches, with a ``TorchDispatchMode`` pushed on
  torch's dispatch stack (it sees each operator on a tensor, however the function was reached,
  and the pieces a composite operator decomposes into), and
* counts the Triton kernels the call launches (``run`` of Triton's ``JITFunction`` and of its
  CPU interpreter's ``InterpretedFunction``, wherever those classes are loaded when the call starts).

A call fails (:func:`Watch.verdict` names why, as an identifier the grader accepts as an error
name; :func:`describe` turns it into the student's sentence) when it dispatched an attention
operator or one of :data:`COMPUTE`, launched no Triton kernel, or left the dispatch stack
without the watch's mode. Triton's interpreter itself dispatches only copies and views
(measured on the course's kernel: ``aten::empty``, ``aten::copy_``, ``aten::_to_copy``, ...).

Loaded by the worker as a private copy (its builtins as they were before any student code);
it imports nothing: the worker passes torch in, imported before any student code.
"""

#: ATen operators (by name, without the namespace and overload) that compute what the kernel must:
#: matrix products and the softmax family. Any operator whose name contains "attention" fails too.
COMPUTE = frozenset({"mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "linear", "einsum",
                     "_softmax", "_safe_softmax", "softmax", "_log_softmax", "log_softmax", "logsumexp"})

#: The error names of a failed call: an ATen operator's name follows TORCH.
TORCH, NO_KERNEL, POPPED = "TorchCompute_", "NoTritonKernel", "DispatchModeRemoved"
#: The longest error name the grader's feedback repeats (:func:`attngrade.feedback.hidden_message`).
_LONGEST = 60
_RULE = "the attention must be computed by your Triton kernel; torch may only allocate, convert and launch"


def applies(allowed) -> bool:
    """Whether an assignment's answers are watched: its ``cases.py``'s ``ALLOWED_MODULES``
    (``allowed``) lets them import torch, which they may then use only to allocate and launch."""
    return "torch" in tuple(allowed or ())


def op_name(func) -> str:
    """``aten::_softmax.default`` -> ``_softmax`` (the operator's name without namespace or overload)."""
    name = getattr(func, "__name__", None) or str(func)
    name = str(name).split("::")[-1]
    return name.split(".")[0]


def forbidden(name: str) -> bool:
    """Whether an ATen operator's name is one an answer may not dispatch."""
    return "attention" in name or name in COMPUTE


def describe(error) -> str | None:
    """The student's sentence for an error name of :func:`Watch.verdict` (None for any other)."""
    if not isinstance(error, str):
        return None
    if error.startswith(TORCH):
        return f"computed with torch (aten::{error[len(TORCH):]}): {_RULE}"
    if error == NO_KERNEL:
        return f"launched no Triton kernel: {_RULE}"
    if error == POPPED:
        return f"removed the grader's watch from torch's dispatch stack: {_RULE}"
    return None


def _launch_classes(modules) -> list:
    """Triton's kernel classes loaded now (a notebook may import Triton again, with the interpreter)."""
    found = []
    for module_name, class_name in (("triton.runtime.jit", "JITFunction"),
                                    ("triton.runtime.interpreter", "InterpretedFunction")):
        cls = getattr(modules.get(module_name), class_name, None)
        if isinstance(cls, type) and callable(getattr(cls, "run", None)):
            found.append(cls)
    return found


class Tripwire:
    """Made once per worker, before any student code, with torch imported then."""

    def __init__(self, torch, modules):
        from torch.utils._python_dispatch import TorchDispatchMode

        self.modules, self.active = modules, None
        self._push, self._pop = torch._C._push_on_torch_dispatch_stack, torch._C._pop_torch_dispatch_stack
        self._depth, self._at = torch._C._len_torch_dispatch_stack, torch._C._get_dispatch_stack_at
        tripwire = self

        class _Recorder(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                watch = tripwire.active
                if watch is not None:
                    watch.ops.add(op_name(func))
                return func(*args, **(kwargs or {}))

        self.mode_class = _Recorder
        self.patched: set = set()

    def hook_launches(self) -> None:
        """Count the launches of every Triton kernel class loaded now (each class once)."""
        for cls in _launch_classes(self.modules):
            if cls in self.patched:
                continue
            original, tripwire = cls.run, self

            def run(kernel, *args, _original=original, **kwargs):
                watch = tripwire.active
                if watch is not None and not kwargs.get("warmup"):
                    watch.launches += 1
                return _original(kernel, *args, **kwargs)

            cls.run = run
            self.patched.add(cls)

    def watch(self) -> "Watch":
        return Watch(self)


class Watch:
    """One call's record: a context manager around the call (inside the student's builtins)."""

    def __init__(self, tripwire: Tripwire):
        self.tripwire, self.ops, self.launches = tripwire, set(), 0
        self.mode, self.removed = None, False

    def __enter__(self):
        tripwire = self.tripwire
        tripwire.hook_launches()
        self.mode = tripwire.mode_class()
        self.depth = tripwire._depth()
        tripwire._push(self.mode)
        tripwire.active = self
        return self

    def __exit__(self, *exc):
        tripwire = self.tripwire
        tripwire.active = None
        depth = tripwire._depth()
        if depth <= self.depth or tripwire._at(self.depth) is not self.mode:
            self.removed = True  # the call popped it (and maybe pushed something else)
        while tripwire._depth() > self.depth:
            tripwire._pop(None)  # whatever the call left on the stack above the watch goes too
        return False

    def verdict(self) -> str | None:
        """None for a call that computed with Triton only, else the error name that says why."""
        if self.removed:
            return POPPED
        bad = sorted(name for name in self.ops if forbidden(name))
        if bad:
            attention = [name for name in bad if "attention" in name]
            return (TORCH + (attention or bad)[0])[:_LONGEST]
        if not self.launches:
            return NO_KERNEL
        return None
