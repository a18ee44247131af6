#include "diff/saved_run.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "include/spire/spire.h"
#include "io/file_bytes.h"
#include "io/tensor_file.h"
#include "runtime/cache_record.h"

namespace spire::diff {

namespace {

using Json = nlohmann::ordered_json;

// "vulkan_0": a device id as a file name.
std::string file_stem_of(const std::string& device) {
  std::string name = device;
  for (char& ch : name)
    if (ch == ':') ch = '_';
  return name;
}
std::string file_name_of(const std::string& device) { return file_stem_of(device) + ".safetensors"; }
std::string unfused_file_name_of(const std::string& device) { return file_stem_of(device) + ".unfused.safetensors"; }

// The values, with where the device's plan computed each (launch, kernel, tuning) in the file's metadata, so that a
// report against the saved run can name the other machine's kernels too.
void save_capture(const std::filesystem::path& dir, const Capture& c) {
  Json origins = Json::object();
  for (const auto& [name, o] : c.origins)
    origins[name] = {{"source", source_name(o.source)}, {"launch", o.launch}, {"kernel", o.kernel}, {"tuning", o.tuning},
                     {"unfused_kernel", o.unfused_kernel}};
  if (!c.unfused_run.empty()) io::save_tensors(dir / unfused_file_name_of(c.device), c.unfused_run);
  io::save_tensors(dir / file_name_of(c.device), c.values,
                   {{"device", c.device}, {"device_name", c.device_name}, {"driver", c.driver}, {"origins", origins.dump()}});
}

// The origins save_capture wrote (none for the reference).
std::map<std::string, ValueOrigin> saved_origins(const std::filesystem::path& file) {
  std::map<std::string, ValueOrigin> out;
  const io::SafetensorsFile f = io::read_safetensors(file);
  const auto it = f.metadata.find("origins");
  if (it == f.metadata.end()) return out;
  const Json parsed = Json::parse(it->second);
  for (const auto& [name, o] : parsed.items())
    out[name] = {o.at("source").get<std::string>() == source_name(Source::Unfused) ? Source::Unfused : Source::Stored,
                 o.at("launch").get<std::string>(), o.at("kernel").get<std::string>(),
                 o.at("tuning").get<std::string>(), o.value("unfused_kernel", "")};
  return out;
}

}  // namespace

std::string spire_version() {
  return fmt::format("{}.{}.{}", SPIRE_API_VERSION / 10000, SPIRE_API_VERSION / 100 % 100, SPIRE_API_VERSION % 100);
}

std::string files_hash(const std::vector<std::filesystem::path>& files) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& f : files) {
    if (!std::filesystem::exists(f)) continue;
    const std::vector<uint8_t> bytes = io::read_file_bytes(f);
    h = rt::fnv1a64(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), h);
  }
  return fmt::format("{:016x}", h);
}

void save_run(const std::filesystem::path& dir, const RunIdentity& id, const Capture& reference,
              const std::vector<Capture>& devices) {
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir / "manifest.json");
  Json m;
  m["spire_version"] = spire_version();
  m["model"] = id.model;
  m["model_hash"] = id.model_hash;
  m["inputs"] = id.inputs;
  m["inputs_hash"] = id.inputs_hash;
  auto& list = m["devices"] = Json::array();
  std::vector<const Capture*> all{&reference};
  for (const auto& d : devices) all.push_back(&d);
  for (const Capture* c : all) {
    save_capture(dir, *c);
    Json d = {{"id", c->device}, {"name", c->device_name}, {"driver", c->driver}, {"file", file_name_of(c->device)}};
    if (!c->unfused_run.empty()) d["unfused_file"] = unfused_file_name_of(c->device);
    list.push_back(std::move(d));
  }
  const std::string text = m.dump(2) + "\n";
  io::write_file_bytes_atomically(dir / "manifest.json",
                                  std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

SavedRun load_run(const std::filesystem::path& dir, const RunIdentity& expected) {
  const auto manifest_path = dir / "manifest.json";
  if (!std::filesystem::exists(manifest_path))
    throw std::runtime_error(fmt::format("--against {}: no manifest.json there (a directory written by spire diff --save)",
                                         dir.string()));
  Json m;
  try {
    const auto bytes = io::read_file_bytes(manifest_path);
    m = Json::parse(bytes.begin(), bytes.end());
    SavedRun run;
    run.spire_version = m.at("spire_version").get<std::string>();
    run.identity = {m.at("model").get<std::string>(), m.at("model_hash").get<std::string>(),
                    m.at("inputs").get<std::string>(), m.at("inputs_hash").get<std::string>()};
    if (run.identity.model_hash != expected.model_hash)
      throw std::runtime_error(fmt::format(
          "--against {}: the saved run is of another model: model hash {} ({}) there, {} ({}) here", dir.string(),
          run.identity.model_hash, run.identity.model, expected.model_hash, expected.model));
    if (run.identity.inputs_hash != expected.inputs_hash)
      throw std::runtime_error(fmt::format(
          "--against {}: the saved run had other inputs: inputs hash {} ({}) there, {} ({}) here", dir.string(),
          run.identity.inputs_hash, run.identity.inputs, expected.inputs_hash, expected.inputs));
    for (const Json& d : m.at("devices")) {
      Capture c;
      const std::string id = d.at("id").get<std::string>();
      c.device = "saved:" + id;
      c.device_name = d.at("name").get<std::string>();
      c.driver = d.at("driver").get<std::string>();
      c.values = io::load_tensors(dir / d.at("file").get<std::string>());
      if (id == "reference") {
        run.reference = std::move(c);
      } else {
        c.notes.push_back(fmt::format("values saved by spire {} in {}", run.spire_version, dir.string()));
        c.origins = saved_origins(dir / d.at("file").get<std::string>());
        if (const auto it = d.find("unfused_file"); it != d.end())
          c.unfused_run = io::load_tensors(dir / it->get<std::string>());
        run.devices.push_back(std::move(c));
      }
    }
    if (run.reference.values.empty())
      throw std::runtime_error(fmt::format("{}: lists no reference", manifest_path.string()));
    return run;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: not a spire diff manifest ({})", manifest_path.string(), e.what()));
  }
}

}  // namespace spire::diff
