#include "python_values.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

import jsonl.writer;

namespace jsonl_perf::python {
namespace {

namespace json = boost::json;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view strip(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string repr_string(std::string_view text) {
  const bool single = text.find('\'') != std::string_view::npos && text.find('"') == std::string_view::npos;
  const char quote = single ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7F) {
      char escape[5];
      std::snprintf(escape, sizeof escape, "\\x%02x", byte);
      out += escape;
    } else {
      out += c;
    }
  }
  return out + quote;
}

// Digits of a fixed width at `text`, or -1.
int digits(std::string_view text, std::size_t at, std::size_t width) {
  if (at + width > text.size()) return -1;
  int value = 0;
  for (std::size_t i = at; i < at + width; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

const Value* get(const json::object& object, std::string_view key) { return object.if_contains(key); }

Value value_at(const json::object& object, std::string_view key) {
  const Value* value = get(object, key);
  return value ? *value : Value();
}

const json::object* object_at(const json::object& object, std::string_view key) {
  const Value* value = get(object, key);
  return value ? value->if_object() : nullptr;
}

const json::object& object_or_empty(const Value* value) {
  static const json::object empty;
  return value && value->is_object() ? value->get_object() : empty;
}

bool truthy(const Value* value) {
  if (!value) return false;
  switch (value->kind()) {
    case json::kind::null:
      return false;
    case json::kind::bool_:
      return value->get_bool();
    case json::kind::int64:
      return value->get_int64() != 0;
    case json::kind::uint64:
      return value->get_uint64() != 0;
    case json::kind::double_:
      return value->get_double() != 0;
    case json::kind::string:
      return !value->get_string().empty();
    case json::kind::array:
      return !value->get_array().empty();
    case json::kind::object:
      return !value->get_object().empty();
  }
  return false;
}

std::optional<double> to_float(const Value* value) {
  if (!value) return std::nullopt;
  if (value->is_double()) return value->get_double();
  if (value->is_int64()) return static_cast<double>(value->get_int64());
  if (value->is_uint64()) return static_cast<double>(value->get_uint64());
  if (value->is_bool()) return value->get_bool() ? 1.0 : 0.0;
  if (value->is_string()) {
    const std::string text(strip(value->get_string()));
    char* end = nullptr;
    const double number = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size()) return number;
  }
  return std::nullopt;
}

std::string str(const Value& value) { return value.is_string() ? std::string(value.get_string()) : repr(value); }

std::string repr(const Value& value) {
  switch (value.kind()) {
    case json::kind::null:
      return "None";
    case json::kind::bool_:
      return value.get_bool() ? "True" : "False";
    case json::kind::int64:
      return std::to_string(value.get_int64());
    case json::kind::uint64:
      return std::to_string(value.get_uint64());
    case json::kind::double_: {
      const double number = value.get_double();
      if (std::isnan(number)) return "nan";
      if (std::isinf(number)) return number > 0 ? "inf" : "-inf";
      return jsonl::to_json_text(value);
    }
    case json::kind::string:
      return repr_string(value.get_string());
    case json::kind::array: {
      std::string out = "[";
      for (const Value& item : value.get_array()) out += (out.size() > 1 ? ", " : "") + repr(item);
      return out + "]";
    }
    case json::kind::object: {
      std::string out = "{";
      for (const auto& member : value.get_object()) {
        out += (out.size() > 1 ? ", " : "") + repr_string(member.key()) + ": " + repr(member.value());
      }
      return out + "}";
    }
  }
  return {};
}

std::vector<std::string> sse_data(std::string_view text) {
  std::vector<std::string> events;
  for (std::size_t from = 0; from <= text.size();) {
    std::size_t end = text.find("\n\n", from);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view block = text.substr(from, end - from);
    std::string data;
    bool any = false;
    for (std::size_t line_from = 0; line_from <= block.size();) {
      std::size_t line_end = block.find('\n', line_from);
      if (line_end == std::string_view::npos) line_end = block.size();
      const std::string_view line = block.substr(line_from, line_end - line_from);
      if (line.starts_with("data:")) {
        if (any) data += '\n';
        data += strip(line.substr(5));
        any = true;
      }
      line_from = line_end + 1;
    }
    if (any) events.push_back(std::move(data));
    from = end + 2;
  }
  return events;
}

std::optional<double> parse_iso(const Value* value) {
  if (!value || !value->is_string() || value->get_string().empty()) return std::nullopt;
  const std::string_view text = value->get_string();
  const int year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
  const int hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
  if (year < 0 || month < 1 || day < 1 || hour < 0 || minute < 0 || second < 0 || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != ' ') || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  std::size_t at = 19;
  std::int64_t micros = 0;
  if (at < text.size() && text[at] == '.') {
    std::size_t width = 0;
    while (at + 1 + width < text.size() && text[at + 1 + width] >= '0' && text[at + 1 + width] <= '9') ++width;
    if (width == 0) return std::nullopt;
    const std::size_t kept = std::min<std::size_t>(width, 6);  // past six: dropped, not rounded
    micros = digits(text, at + 1, kept);
    for (std::size_t scale = kept; scale < 6; ++scale) micros *= 10;
    at += 1 + width;
  }
  std::int64_t offset_seconds = 0;
  const std::string_view zone = text.substr(at);
  if (zone == "Z") {
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':' && digits(zone, 1, 2) >= 0 &&
             digits(zone, 4, 2) >= 0) {
    offset_seconds = (zone[0] == '-' ? -1 : 1) * (digits(zone, 1, 2) * 3600 + digits(zone, 4, 2) * 60);
  } else {
    return std::nullopt;
  }
  std::tm parts{};
  parts.tm_year = year - 1900;
  parts.tm_mon = month - 1;
  parts.tm_mday = day;
  parts.tm_hour = hour;
  parts.tm_min = minute;
  parts.tm_sec = second;
  const std::int64_t seconds = static_cast<std::int64_t>(::timegm(&parts)) - offset_seconds;
  // timedelta.total_seconds(): the whole microseconds, then one division.
  return static_cast<double>(seconds * 1'000'000 + micros) / 1e6;
}

std::string utc_iso(std::optional<double> epoch) {
  if (!epoch) return {};
  double whole = std::floor(*epoch);
  if (std::nearbyint((*epoch - whole) * 1e6) >= 1e6) whole += 1;
  const auto seconds = static_cast<std::time_t>(whole);
  std::tm parts{};
  ::gmtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

std::string cell(const Value& value) {
  if (value.is_null()) return {};
  if (value.is_double()) {
    char text[400];
    std::snprintf(text, sizeof text, "%.4f", value.get_double());
    std::string spelt(text);
    while (spelt.ends_with('0')) spelt.pop_back();
    if (spelt.ends_with('.')) spelt.pop_back();
    return spelt;
  }
  return str(value);
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string row;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) row += ',';
    const std::string& field = fields[i];
    if (field.find_first_of(",\"\r\n") == std::string::npos) {
      row += field;
      continue;
    }
    row += '"';
    for (const char c : field) row += c == '"' ? std::string("\"\"") : std::string(1, c);
    row += '"';
  }
  return row + "\r\n";
}

}  // namespace jsonl_perf::python
