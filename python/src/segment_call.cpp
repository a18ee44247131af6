// spire._spire.SegmentCall: one call of a spire.torch segment's plan as one C++ call, the hot path of spire inside
// PyTorch. Python (spire/torch/segment_runner.py) builds one after a call it ran itself, describing that call: the
// inputs (tensors with their type, dtype, shape and device; other values), the weights (where the module holds each:
// a dictionary and a key), the outputs. A later call with inputs of the same description then
//   - checks every weight for change: the same object in its dictionary, the same _version (in-place changes), the
//     same data_ptr (.data replaced); a changed weight of the same dtype, shape and device is uploaded again here
//     (and noted in the plan's `uploaded` stamps, which Python's own upload path reads), nothing else is;
//   - sets the inputs from the tensors' memory (host memcpy; on cuda:N, device to device after spire's queue waits on
//     the device for torch's current stream);
//   - runs the step (cuda:N: submitted, up to the plan's steps in flight, never waited for; while the last call found
//     no weight changed, before the weights are checked, and again after uploading any found changed since);
//   - makes the outputs (torch.empty) and copies the results into them (cuda:N: then torch's stream waits on the
//     device for spire's queue).
// Whatever it cannot do exactly as the Python path would (another input description, a weight now of another shape,
// dtype or device, a value not exchanged as raw float32) it leaves to the Python path, which handles every case: it
// returns None, having made no result (at most a step launched first, whose results nothing reads).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "python/src/bindings.h"
#include "python/src/py_executable.h"
#include "python/src/torch_tensor_fields.h"

namespace py = pybind11;

namespace spire::python {
namespace {

namespace tt = torch_tensor;

// Whether a description (a tuple) is of a tensor ("tensor", ...) or of another value ("value", v); ValueError else.
bool describes_tensor(const py::tuple& d, const char* what) {
  std::string kind = d.empty() ? "" : py::str(d[0]).cast<std::string>();
  if (kind != "tensor" && kind != "value")
    throw py::value_error(fmt::format("SegmentCall: an {} is described as ('tensor', ...) or ('value', v), not {}",
                                      what, py::repr(d).cast<std::string>()));
  return kind == "tensor";
}

size_t float_bytes(const py::handle& shape) {
  size_t n = sizeof(float);
  for (py::handle d : shape) n *= d.cast<size_t>();
  return n;
}

// What an input's and an output's description both say: a tensor exchanged by its spire name, or another value.
struct Described {
  bool tensor = false;
  std::string name;   // a tensor's
  py::object value;   // another value's: an input is compared with ==, an output returned as it is
  size_t bytes = 0;   // a tensor's
};

struct Input : Described {
  py::object type, dtype, shape, device;  // a tensor's
};

// Reads the part of description h that `out` has of Described; returns the tuple for the rest.
py::tuple describe(py::handle h, const char* what, Described& out) {
  auto d = h.cast<py::tuple>();
  out.tensor = describes_tensor(d, what);
  if (out.tensor)
    out.name = d[1].cast<std::string>();
  else
    out.value = d[1];
  return d;
}

// One weight: where the module holds it, what the plan holds of it (its spire name; empty: the plan reads none of it,
// only its shape is part of the plan's key), and the stamp of the tensor uploaded.
struct Weight {
  py::object dict, key;
  std::string name;
  bool raw = false;  // uploaded as raw float32 from its memory (else only the Python path uploads it)
  py::object tensor, dtype, shape, device;
  int64_t version = 0;
  uint64_t address = 0;
  size_t bytes = 0;
};

struct Output : Described {
  py::tuple empty_args;  // (shape,)
};

class SegmentCall {
 public:
  SegmentCall(py::object executable, bool device_io, py::object current_stream, py::object batch,
              const py::list& inputs, const py::list& weights, const py::list& outputs, py::dict uploaded,
              py::object empty, py::dict empty_options)
      : owner_(std::move(executable)),
        exe_(owner_.cast<PyExecutable&>()),
        device_io_(device_io),
        current_stream_(std::move(current_stream)),
        batch_(std::move(batch)),
        uploaded_(std::move(uploaded)),
        empty_(std::move(empty)),
        empty_options_(std::move(empty_options)) {
    if (device_io_ && current_stream_.is_none())
      throw py::value_error("SegmentCall: a plan exchanging device memory needs current_stream (torch's stream)");
    for (py::handle h : inputs) {
      Input in;
      const py::tuple d = describe(h, "input", in);
      if (in.tensor) {
        in.type = d[2], in.dtype = d[3], in.shape = d[4], in.device = d[5];
        in.bytes = float_bytes(in.shape);
      }
      inputs_.push_back(std::move(in));
    }
    for (py::handle h : weights) {
      auto d = h.cast<py::tuple>();
      Weight w;
      w.dict = d[0], w.key = d[1];
      w.name = d[2].is_none() ? "" : d[2].cast<std::string>();
      w.raw = d[4].cast<bool>();
      stamp(w, d[3]);
      weights_.push_back(std::move(w));
    }
    for (py::handle h : outputs) {
      Output out;
      const py::tuple d = describe(h, "output", out);
      if (out.tensor) {
        out.empty_args = py::make_tuple(d[2]);
        out.bytes = float_bytes(d[2]);
      }
      outputs_.push_back(std::move(out));
    }
  }

  // The segment's outputs (a list), or None where this call is not the one described (no result was made; at most a
  // step launched first whose results nothing reads).
  py::object run(const py::sequence& inputs, const py::object& batch) {
    if (!tt::equal(batch.ptr(), batch_.ptr()) || size_t(py::len(inputs)) != inputs_.size()) return py::none();
    std::vector<uint64_t> addresses(inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Input& in = inputs_[i];
      py::object v = inputs[i];
      if (!in.tensor) {
        if (!tt::equal(v.ptr(), in.value.ptr())) return py::none();
        continue;
      }
      PyObject* t = v.ptr();
      if (Py_TYPE(t) != reinterpret_cast<PyTypeObject*>(in.type.ptr()) || tt::dtype(t).ptr() != in.dtype.ptr() ||
          !tt::equal(tt::shape(t).ptr(), in.shape.ptr()) || !tt::equal(tt::device(t).ptr(), in.device.ptr()) ||
          !tt::is_contiguous(t))
        return py::none();
      addresses[i] = tt::data_ptr(t);
    }
    // Where the last call found every weight as described, a call on the device launches the step before reading
    // the weights (the host's reading of hundreds of them then overlaps the step instead of delaying it); a weight
    // found changed since is uploaded and the step launched again, ordered after the first on spire's queue, whose
    // results nothing reads. A call that found changes reads the weights first, as every call of a training loop
    // does. On the host path the step runs where it is called, so the weights are always read first.
    const bool launch_first = device_io_ && !weights_changed_last_;
    std::vector<std::pair<Weight*, py::object>> changed;
    if (!launch_first && !read_weights(changed)) return py::none();

    // The call is the one described (or, launching first, its inputs are): from here on it runs to the end.
    uint64_t stream = 0;
    if (device_io_) {
      stream = current_stream_().cast<uint64_t>();
      // What torch queued on its stream (the inputs' and weights' writes, the last use of the memory torch.empty will
      // give the outputs) is done before spire's queue copies anything: ordered on the device.
      exe_.wait_for_stream(stream);
    }
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (inputs_[i].tensor) copy_in(inputs_[i].name, addresses[i], inputs_[i].bytes);
    upload(changed);
    if (device_io_)
      exe_.submit();
    else
      exe_.step();
    if (launch_first) {
      if (!read_weights(changed)) {
        weights_changed_last_ = true;
        return py::none();  // a weight the C++ call cannot take: the Python path runs the call (and its own step)
      }
      upload(changed);
      if (reads_any(changed)) exe_.submit();  // a weight the plan reads changed: the step again, with it
    }
    weights_changed_last_ = reads_any(changed);
    py::list results(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const Output& out = outputs_[i];
      if (!out.tensor) {
        results[i] = out.value;
        continue;
      }
      py::object t = py::reinterpret_steal<py::object>(
          PyObject_Call(empty_.ptr(), out.empty_args.ptr(), empty_options_.ptr()));
      if (!t) throw py::error_already_set();
      uint64_t address = tt::data_ptr(t.ptr());
      if (device_io_)
        exe_.get_device(out.name, address, out.bytes);
      else
        exe_.get_into(out.name, address, out.bytes);
      results[i] = std::move(t);
    }
    // torch's stream runs what it is given next (reading the outputs, freeing or reusing the inputs' memory) after
    // spire's copies: ordered on the device.
    if (device_io_) exe_.signal_stream(stream);
    return results;
  }

 private:
  // The weights changed since their stamps, into `changed`; false where one is gone from its dictionary or cannot be
  // taken here (still_fits), for the Python path to take.
  bool read_weights(std::vector<std::pair<Weight*, py::object>>& changed) {
    for (Weight& w : weights_) {
      PyObject* found = PyDict_GetItemWithError(w.dict.ptr(), w.key.ptr());  // borrowed
      if (!found) {
        if (PyErr_Occurred()) throw py::error_already_set();
        return false;  // moved to another dictionary (a buffer made a parameter): Python finds it again
      }
      auto t = py::reinterpret_borrow<py::object>(found);  // held: reading it may run Python code
      if (found != w.tensor.ptr() || tt::version(found) != w.version || tt::data_ptr(found) != w.address) {
        if (!still_fits(w, found)) return false;
        changed.emplace_back(&w, std::move(t));
      }
    }
    return true;
  }

  // Whether any of the changed weights is one the plan reads (the rest are only stamped).
  static bool reads_any(const std::vector<std::pair<Weight*, py::object>>& changed) {
    for (const auto& [w, t] : changed)
      if (w->raw) return true;
    return false;
  }

  // Copies the changed weights the plan holds as raw float32 in, and stamps them all.
  void upload(std::vector<std::pair<Weight*, py::object>>& changed) {
    for (auto& [w, t] : changed) {
      if (w->raw) copy_in(w->name, tt::data_ptr(t.ptr()), w->bytes);
      stamp(*w, t);
      if (w->raw)
        uploaded_[py::str(w->name)] =
            py::make_tuple(w->version, w->address, py::tuple(py::reinterpret_borrow<py::object>(w->shape)));
    }
  }

  // Whether a changed weight can be taken here: one the plan reads must keep its dtype, shape and device (the plan's
  // key) and be raw float32 memory; one it does not read only its shape and device.
  bool still_fits(const Weight& w, PyObject* t) const {
    if (Py_TYPE(t) != Py_TYPE(w.tensor.ptr())) return false;
    if (!tt::equal(tt::shape(t).ptr(), w.shape.ptr()) || !tt::equal(tt::device(t).ptr(), w.device.ptr()))
      return false;
    if (w.name.empty()) return true;
    return w.raw && tt::dtype(t).ptr() == w.dtype.ptr() && tt::is_contiguous(t);
  }

  void stamp(Weight& w, py::handle t) {
    w.tensor = py::reinterpret_borrow<py::object>(t);
    w.version = tt::version(t.ptr());
    w.address = tt::data_ptr(t.ptr());
    w.dtype = tt::dtype(t.ptr());
    w.shape = tt::shape(t.ptr());
    w.device = tt::device(t.ptr());
    w.bytes = w.raw ? float_bytes(w.shape) : 0;
  }

  void copy_in(const std::string& name, uint64_t address, size_t bytes) {
    if (device_io_)
      exe_.set_device(name, address, bytes);
    else
      exe_.set_from(name, address, bytes);
  }

  py::object owner_;  // keeps exe_ alive
  PyExecutable& exe_;
  bool device_io_;
  bool weights_changed_last_ = true;  // the first call reads the weights first
  py::object current_stream_;  // () -> torch's current stream on the plan's device, as the driver's handle
  py::object batch_;
  py::dict uploaded_;  // the plan's stamps of what it holds: spire name -> (version, data_ptr, shape)
  py::object empty_;   // torch.empty
  py::dict empty_options_;
  std::vector<Input> inputs_;
  std::vector<Weight> weights_;
  std::vector<Output> outputs_;
};

}  // namespace

void bind_segment_call(py::module_& m) {
  py::class_<SegmentCall>(m, "SegmentCall",
                          "One call of a spire.torch segment's plan in C++: weights checked for change and uploaded "
                          "when changed, inputs set, the step run, outputs made (spire/torch/segment_runner.py)")
      .def(py::init<py::object, bool, py::object, py::object, const py::list&, const py::list&, const py::list&,
                    py::dict, py::object, py::dict>(),
           py::arg("executable"), py::arg("device_io"), py::arg("current_stream"), py::arg("batch"),
           py::arg("inputs"), py::arg("weights"), py::arg("outputs"), py::arg("uploaded"), py::arg("empty"),
           py::arg("empty_options"),
           "inputs: per segment input ('tensor', spire name, type, dtype, shape, device) or ('value', v); weights: "
           "(dictionary, key, spire name or None, tensor, raw float32 upload); outputs: ('tensor', spire name, shape) "
           "or ('value', v); uploaded: the plan's stamps, updated on upload; empty(shape, **empty_options) makes an "
           "output; current_stream() -> torch's stream (device_io only)")
      .def("run", &SegmentCall::run, py::arg("inputs"), py::arg("batch"),
           "The outputs of one call with these inputs (a list), or None where the call is not the one described or "
           "a weight changed in a way only the Python path handles (then nothing was done)");
}

}  // namespace spire::python
