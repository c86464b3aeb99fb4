// Python's bytes: each expected text below is what
//   json.dumps(value, separators=(",", ":"), allow_nan=False, ensure_ascii=...)
// gives for the value, derived from the rules in json_text.cppm.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

import jsonl.writer;

namespace json = boost::json;

namespace {

std::string text(const json::value& value, bool ensure_ascii = true) {
  return jsonl::to_json_text(value, {.ensure_ascii = ensure_ascii});
}

json::value nested_arrays(std::size_t depth) {
  json::value value = json::array{};
  for (std::size_t i = 1; i < depth; ++i) value = json::array{std::move(value)};
  return value;
}

// Python's repr(float), built independently of the serializer: the shortest round-trip
// digits from std::to_chars's scientific form, laid out by Python's float_repr rules.
std::string python_repr(double number) {
  char buffer[48];
  std::string scientific(buffer, std::to_chars(buffer, buffer + sizeof buffer, number,
                                                std::chars_format::scientific).ptr);
  std::string repr;
  if (scientific.front() == '-') {
    repr = "-";
    scientific.erase(0, 1);
  }
  const std::size_t e = scientific.find('e');
  const int exponent = std::stoi(scientific.substr(e + 1));
  std::string digits = scientific.substr(0, e);
  std::erase(digits, '.');
  const int point = exponent + 1;
  const int count = static_cast<int>(digits.size());
  if (point > 16 || point < -3) {
    repr += digits.substr(0, 1);
    if (count > 1) repr += "." + digits.substr(1);
    std::snprintf(buffer, sizeof buffer, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return repr + buffer;
  }
  if (point <= 0) return repr + "0." + std::string(-point, '0') + digits;
  if (point < count) return repr + digits.substr(0, point) + "." + digits.substr(point);
  return repr + digits + std::string(point - count, '0') + ".0";
}

// json.dumps's string for ASCII text and 'é' (U+00E9, "\xc3\xa9"), built a byte at a time
// independently of the serializer.
std::string python_string(std::string_view text, bool ensure_ascii) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    char escape[8];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case 0xc3:
        out += ensure_ascii ? "\\u00e9" : "\xc3\xa9";
        ++i;
        break;
      default:
        if (c < 0x20 || (c == 0x7f && ensure_ascii)) {
          std::snprintf(escape, sizeof escape, "\\u%04x", c);
          out += escape;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// A streamed answer's server-sent events, as a response line quotes them: a quote every
// few bytes, a newline pair after each frame, some frames with 'é'.
std::string streamed_frames(std::size_t frames) {
  std::string text;
  for (std::size_t i = 0; i < frames; ++i) {
    text += R"(data: {"id":"chatcmpl-7","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":")";
    text += i % 3 == 0 ? " caf\xc3\xa9" : " the";
    text += R"("},"finish_reason":null}]})";
    text += "\n\n";
  }
  return text;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(json_text)

BOOST_AUTO_TEST_CASE(doubles_print_as_python_repr) {
  const std::vector<std::pair<double, std::string>> cases{
      {1.0, "1.0"},
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {-1.5, "-1.5"},
      {0.1, "0.1"},
      {0.5, "0.5"},
      {3.14, "3.14"},
      {100.0, "100.0"},
      {1.0 / 3.0, "0.3333333333333333"},
      {12345.123456, "12345.123456"},
      {0.0001, "0.0001"},
      {0.00015, "0.00015"},
      {0.00001, "1e-05"},
      {2.5e-05, "2.5e-05"},
      {1.5e-07, "1.5e-07"},
      {1e15, "1000000000000000.0"},
      {9007199254740993.0, "9007199254740992.0"},
      {1e16, "1e+16"},
      {1.5e16, "1.5e+16"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {1e22, "1e+22"},
      {1e100, "1e+100"},
      {5e-324, "5e-324"},
      {2.2250738585072014e-308, "2.2250738585072014e-308"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {-1.7976931348623157e308, "-1.7976931348623157e+308"},
  };
  for (const auto& [number, expected] : cases) BOOST_TEST(text(number) == expected);
}

BOOST_AUTO_TEST_CASE(random_doubles_print_as_python_repr) {
  std::mt19937_64 random(20261130);
  std::size_t checked = 0;
  for (int i = 0; i < 300'000; ++i) {
    double number = std::bit_cast<double>(random());  // every magnitude and digit count
    if (i % 3 == 1) number = double(random() % 100'000'000) / std::pow(10.0, int(random() % 12));  // short decimals
    if (i % 3 == 2) number = double(random() >> (random() % 64));  // whole numbers
    if (!std::isfinite(number)) continue;
    const std::string expected = python_repr(number);
    if (text(number) != expected) BOOST_TEST(text(number) == expected);
    ++checked;
  }
  BOOST_TEST(checked > 250'000u);
}

BOOST_AUTO_TEST_CASE(integers_print_exactly_across_the_64_bit_ranges) {
  BOOST_TEST(text(std::int64_t{0}) == "0");
  BOOST_TEST(text(std::int64_t{-42}) == "-42");
  BOOST_TEST(text(std::numeric_limits<std::int64_t>::min()) == "-9223372036854775808");
  BOOST_TEST(text(std::numeric_limits<std::int64_t>::max()) == "9223372036854775807");
  BOOST_TEST(text(std::numeric_limits<std::uint64_t>::max()) == "18446744073709551615");
}

BOOST_AUTO_TEST_CASE(literals_and_containers_are_compact) {
  BOOST_TEST(text(nullptr) == "null");
  BOOST_TEST(text(true) == "true");
  BOOST_TEST(text(false) == "false");
  BOOST_TEST(text(json::array{}) == "[]");
  BOOST_TEST(text(json::object{}) == "{}");
  BOOST_TEST(text(json::parse(R"({"b":[1,{"c":null}],"a":{},"z":"s"})")) ==
             R"({"b":[1,{"c":null}],"a":{},"z":"s"})");
}

BOOST_AUTO_TEST_CASE(strings_escape_as_python_does) {
  BOOST_TEST(text("\"\\\n\r\t\b\f") == R"("\"\\\n\r\t\b\f")");
  BOOST_TEST(text(json::string("\x00\x01\x1f", 3)) == R"("\u0000\u0001\u001f")");
  BOOST_TEST(text("/ plain ~") == R"("/ plain ~")");
  BOOST_TEST(text("\x7f") == R"("\u007f")");
  BOOST_TEST(text("\x7f", false) == "\"\x7f\"");
  BOOST_TEST(text(json::object{{"k\"\xc3\xa9", 1}}) == R"({"k\"\u00e9":1})");
}

BOOST_AUTO_TEST_CASE(escapes_are_found_at_every_position_of_strings_of_every_length) {
  const std::vector<std::pair<std::string, std::string>> specials{
      {"\"", R"(\")"}, {"\\", R"(\\)"}, {"\n", R"(\n)"}, {"\x1f", R"(\u001f)"},
      {"\x7f", R"(\u007f)"}, {"\xc3\xa9", R"(\u00e9)"}, {"\xff", R"(\ufffd)"}};
  for (const auto& [special, escaped] : specials) {
    for (std::size_t length = 0; length <= 40; ++length) {
      for (std::size_t at = 0; at <= length; ++at) {
        const std::string before(at, 'a');
        const std::string after(length - at, '~');
        BOOST_TEST(text(json::string(before + special + after)) == "\"" + before + escaped + after + "\"",
                   "special " << escaped << " at " << at << " of " << length);
      }
    }
  }
  for (std::size_t length = 0; length <= 40; ++length) {
    BOOST_TEST(text(json::string(std::string(length, ' '))) == "\"" + std::string(length, ' ') + "\"");
  }
  BOOST_TEST(text(json::string(std::string(100, ' ') + "~")) == "\"" + std::string(100, ' ') + "~\"");
}

BOOST_AUTO_TEST_CASE(densely_escaped_frames_are_written_byte_for_byte) {
  for (const std::size_t frames : {1, 2, 7, 18, 60}) {
    const std::string frames_text = streamed_frames(frames);
    for (const bool ensure_ascii : {true, false}) {
      BOOST_TEST(text(json::string(frames_text), ensure_ascii) == python_string(frames_text, ensure_ascii),
                 frames << " frames, ensure_ascii " << ensure_ascii);
    }
  }
}

BOOST_AUTO_TEST_CASE(every_ascii_byte_is_written_byte_for_byte_at_every_offset_of_dense_and_sparse_text) {
  std::mt19937 random(11);
  for (const int plain_run : {0, 3, 15, 16, 17, 40}) {  // plain bytes between escapes
    std::string input = "\"";  // not plain: the rest goes through the escaping loop
    for (int c = 0; input.size() < 1200; c = (c + 1) % 0x80) {
      input += static_cast<char>(c);
      for (int i = 0; i < plain_run; ++i) input += static_cast<char>('a' + random() % 26);
    }
    for (const bool ensure_ascii : {true, false}) {
      for (const std::size_t length : {input.size(), std::size_t{255}, std::size_t{256}, std::size_t{257}}) {
        const std::string_view part(input.data(), length);
        BOOST_TEST(text(json::string(part), ensure_ascii) == python_string(part, ensure_ascii),
                   "runs of " << plain_run << ", " << length << " bytes, ensure_ascii " << ensure_ascii);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_character_split_across_any_block_edge_is_written_whole) {
  for (std::size_t at = 1; at <= 600; ++at) {
    std::string input = "\"" + std::string(at - 1, '"');
    input += "\xc3\xa9\n";
    for (const bool ensure_ascii : {true, false}) {
      BOOST_TEST(text(json::string(input), ensure_ascii) == python_string(input, ensure_ascii),
                 "'\\u00e9' at " << at << ", ensure_ascii " << ensure_ascii);
    }
  }
}

BOOST_AUTO_TEST_CASE(four_byte_and_invalid_characters_amid_dense_escapes_are_written_at_every_offset) {
  const std::vector<std::pair<std::string, std::string>> specials{
      {"\xf0\x9f\x98\x80", R"(\ud83d\ude00)"}, {"\xff", R"(\ufffd)"}, {"\xe2\x82", R"(\ufffd)"}};
  for (const auto& [special, escaped] : specials) {
    for (std::size_t at = 1; at <= 80; ++at) {
      std::string before = "\"";
      for (std::size_t i = 1; i < at; ++i) before += i % 3 == 0 ? '\n' : 'a';
      const std::string after = "\"" + std::string(40, 'b') + "\\";
      const std::string expected_before = python_string(before, true), expected_after = python_string(after, true);
      const std::string expected = expected_before.substr(0, expected_before.size() - 1) + escaped +
                                   expected_after.substr(1);
      BOOST_TEST(text(json::string(before + special + after)) == expected, "special " << escaped << " at " << at);
    }
  }
}

BOOST_AUTO_TEST_CASE(non_ascii_is_escaped_with_ensure_ascii_and_kept_without) {
  BOOST_TEST(text("\xc3\xa9") == R"("\u00e9")");
  BOOST_TEST(text("\xe2\x82\xac") == R"("\u20ac")");
  BOOST_TEST(text("\xef\xbf\xbf") == R"("\uffff")");
  BOOST_TEST(text("\xf0\x9f\x98\x80") == R"("\ud83d\ude00")");
  BOOST_TEST(text("\xf4\x8f\xbf\xbf") == R"("\udbff\udfff")");
  BOOST_TEST(text("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", false) ==
             "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
}

BOOST_AUTO_TEST_CASE(invalid_utf8_becomes_replacement_characters) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"a\xff" "b", R"("a\ufffdb")"},
      {"\xe2\x82", R"("\ufffd")"},                             // truncated: one maximal subpart
      {"\xe2\x82" "z", R"("\ufffdz")"},
      {"\xed\xa0\x80", R"("\ufffd\ufffd\ufffd")"},             // an encoded surrogate
      {"\xc0\xaf", R"("\ufffd\ufffd")"},                       // overlong
      {"\xf4\x90\x80\x80", R"("\ufffd\ufffd\ufffd\ufffd")"},   // above U+10FFFF
      {"\x80", R"("\ufffd")"},                                  // lone continuation
  };
  for (const auto& [input, expected] : cases) {
    std::string out;
    BOOST_TEST(jsonl::append_json(json::string(input), out));
    BOOST_TEST(out == expected);
  }
  std::string out;
  BOOST_TEST(jsonl::append_json(json::string("a\xff"), out, {.ensure_ascii = false}));
  BOOST_TEST(out == "\"a\xef\xbf\xbd\"");
  out.clear();
  BOOST_TEST(!jsonl::append_json(json::string("valid \xc3\xa9"), out));
}

BOOST_AUTO_TEST_CASE(nan_and_infinity_are_malformed) {
  for (const double number : {std::numeric_limits<double>::quiet_NaN(),
                              std::numeric_limits<double>::infinity(),
                              -std::numeric_limits<double>::infinity()}) {
    BOOST_CHECK_THROW(text(json::array{1, number}), jsonl::MalformedRecord);
  }
}

BOOST_AUTO_TEST_CASE(nan_and_infinity_are_spelt_as_python_does_when_allowed) {
  std::string out;
  jsonl::append_json(json::array{std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(), 1.5},
                     out, {.allow_nan = true});
  BOOST_TEST(out == "[NaN,Infinity,-Infinity,1.5]");
}

BOOST_AUTO_TEST_CASE(a_stream_writes_an_integer_of_any_size_from_its_digits) {
  std::string out;
  {
    jsonl::JsonTextStream stream(out);
    stream.begin_array();
    stream.integer_text("123456789012345678901234");
    stream.integer_text("-98765432109876543210");
    stream.integer_text("-0");
    stream.end_array();
  }
  BOOST_TEST(out == "[123456789012345678901234,-98765432109876543210,0]");
}

BOOST_AUTO_TEST_CASE(a_stream_refuses_integer_digits_that_are_not_an_integer) {
  for (const std::string_view text : {"", "-", "1.5", "1e5", "12a", "+1", "01", "NaN", " 1"}) {
    std::string out;
    jsonl::JsonTextStream stream(out);
    stream.begin_array();
    BOOST_CHECK_THROW(stream.integer_text(text), jsonl::MalformedRecord);
  }
}

BOOST_AUTO_TEST_CASE(nesting_deeper_than_the_limit_is_malformed) {
  BOOST_TEST(text(nested_arrays(512)) == std::string(512, '[') + std::string(512, ']'));
  BOOST_CHECK_THROW(text(nested_arrays(513)), jsonl::MalformedRecord);
  BOOST_CHECK_THROW(text(nested_arrays(100000)), jsonl::MalformedRecord);
}

BOOST_AUTO_TEST_CASE(a_stream_writes_what_append_json_writes_for_the_object_built_from_its_pieces) {
  std::string streamed = "prefix ";
  bool sanitized;
  {
    jsonl::JsonTextStream stream(streamed, jsonl::JsonTextOptions{.ensure_ascii = false});  // options from a temporary
    stream.begin_object();
    stream.key("id");
    stream.value(7);
    stream.key("nested");
    stream.begin_object();
    stream.key("timing");
    stream.begin_object();
    stream.key("a");
    stream.floating(1.5);
    stream.key("b");
    stream.string("caf\xc3\xa9");
    stream.end_object();
    stream.key("bad");
    stream.value("\xff");
    stream.end_object();
    stream.key("after");
    stream.value(json::array{1, 2});
    stream.end_object();
    sanitized = stream.sanitized();
  }
  const json::object built{{"id", 7},
                           {"nested", json::object{{"timing", json::object{{"a", 1.5}, {"b", "caf\xc3\xa9"}}}, {"bad", "\xff"}}},
                           {"after", json::array{1, 2}}};
  std::string expected = "prefix ";
  BOOST_TEST(jsonl::append_json(built, expected, jsonl::JsonTextOptions{.ensure_ascii = false}) == sanitized);
  BOOST_TEST(streamed == expected);
  BOOST_TEST(sanitized);
}

BOOST_AUTO_TEST_CASE(a_stream_refuses_objects_nested_deeper_than_the_limit) {
  std::string out;
  jsonl::JsonTextStream stream(out, jsonl::JsonTextOptions{.max_depth = 2});
  stream.begin_object();
  stream.key("a");
  stream.begin_object();
  stream.key("b");
  BOOST_CHECK_THROW(stream.begin_object(), jsonl::MalformedRecord);
  BOOST_CHECK_THROW(stream.value(json::array{}), jsonl::MalformedRecord);
}

BOOST_AUTO_TEST_SUITE_END()
