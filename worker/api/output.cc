#include "worker/api/output.h"

#include "worker/api/json_output.h"

namespace keyflow {

void JsonObject::Name(std::string_view name) {
  text_.push_back(text_.empty() ? '{' : ',');
  AppendJsonString(&text_, name);
  text_.push_back(':');
}

JsonObject& JsonObject::Add(std::string_view name, std::string_view value) {
  Name(name);
  AppendJsonString(&text_, value);
  return *this;
}

JsonObject& JsonObject::Add(std::string_view name, int64_t value) {
  Name(name);
  AppendJsonInt(&text_, value);
  return *this;
}

JsonObject& JsonObject::Add(std::string_view name, uint64_t value) {
  Name(name);
  AppendJsonUint(&text_, value);
  return *this;
}

JsonObject& JsonObject::Add(std::string_view name, double value) {
  Name(name);
  AppendJsonDouble(&text_, value);
  return *this;
}

JsonObject& JsonObject::Add(std::string_view name, bool value) {
  Name(name);
  AppendJsonBool(&text_, value);
  return *this;
}

JsonObject& JsonObject::Add(std::string_view name, const Key& key, KeyType type) {
  Name(name);
  AppendJsonKey(&text_, key, type);
  return *this;
}

JsonObject& JsonObject::AddNull(std::string_view name) {
  Name(name);
  text_.append("null");
  return *this;
}

JsonObject& JsonObject::Add(std::string_view name, JsonObject object) {
  return AddRaw(name, object.Build());
}

JsonObject& JsonObject::Add(std::string_view name, JsonArray array) {
  return AddRaw(name, array.Build());
}

JsonObject& JsonObject::AddRaw(std::string_view name, std::string_view json) {
  Name(name);
  text_.append(json.data(), json.size());
  return *this;
}

std::string JsonObject::Build() {
  std::string out;
  out.swap(text_);
  if (out.empty()) return "{}";
  out.push_back('}');
  return out;
}

std::string& JsonArray::Next() {
  text_.push_back(text_.empty() ? '[' : ',');
  return text_;
}

JsonArray& JsonArray::Add(std::string_view value) {
  AppendJsonString(&Next(), value);
  return *this;
}

JsonArray& JsonArray::Add(int64_t value) {
  AppendJsonInt(&Next(), value);
  return *this;
}

JsonArray& JsonArray::Add(uint64_t value) {
  AppendJsonUint(&Next(), value);
  return *this;
}

JsonArray& JsonArray::Add(double value) {
  AppendJsonDouble(&Next(), value);
  return *this;
}

JsonArray& JsonArray::Add(bool value) {
  AppendJsonBool(&Next(), value);
  return *this;
}

JsonArray& JsonArray::Add(const Key& key, KeyType type) {
  AppendJsonKey(&Next(), key, type);
  return *this;
}

JsonArray& JsonArray::Add(JsonObject object) {
  return AddRaw(object.Build());
}

JsonArray& JsonArray::Add(JsonArray array) {
  return AddRaw(array.Build());
}

JsonArray& JsonArray::AddNull() {
  return AddRaw("null");
}

JsonArray& JsonArray::AddRaw(std::string_view json) {
  Next().append(json.data(), json.size());
  return *this;
}

std::string JsonArray::Build() {
  std::string out;
  out.swap(text_);
  if (out.empty()) return "[]";
  out.push_back(']');
  return out;
}

}  // namespace keyflow
