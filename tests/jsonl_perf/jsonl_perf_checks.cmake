# Checks of the jsonl-perf executable, one per CHECK:
#   -D CHECK=replay|loadgen|rotation_and_metrics|request_trace|verify_after_kill|
#            verify_after_kill_zstd|duckdb|summary|compressed|usage|fleet_join|
#            fleet_join_disaggregated
#   -D TOOL=... -D DATA=tests/jsonl_perf -D SCRATCH=...
#   -D PYTHON=the system's python3 (with prometheus_client)
#   -D ARTIFACTS=where a check keeps what CI shows (the run reports' screenshots)
#   -D NODE=node -D DUCKDB_CHECK=tools/duckdb/compare.mjs -D ZSTD=zstd
#   -D DUCKDB_CHECKS=ON|OFF: OFF where DuckDB's Node API is not installed (its parts
#      of the checks say they were skipped; the rest runs)
function(run_tool)
  cmake_parse_arguments(RUN "" "EXPECT" "ARGS" ${ARGN})
  execute_process(COMMAND "${TOOL}" ${RUN_ARGS} RESULT_VARIABLE result
                  OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  if(NOT result EQUAL RUN_EXPECT)
    message(FATAL_ERROR "jsonl-perf ${RUN_ARGS}: exit ${result}, expected ${RUN_EXPECT}\n${stdout}\n${stderr}")
  endif()
  set(stdout "${stdout}" PARENT_SCOPE)
  set(stderr "${stderr}" PARENT_SCOPE)
endfunction()

# `attempt`'s requests.csv, as a reader of the reference's reads it: `rows` rows, each
# with every column named after them filled.
function(expect_requests_csv attempt rows)
  execute_process(COMMAND "${PYTHON}" -c "
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='', encoding='utf-8')))
empty = [(row['trace_id'], column) for row in rows for column in sys.argv[3:] if row[column] == '']
print(len(rows), 'rows; empty:', empty[:3])
sys.exit(0 if len(rows) == int(sys.argv[2]) and not empty else 1)" "${attempt}/requests.csv" ${rows} ${ARGN}
    RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE error)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${attempt}/requests.csv: ${output}${error}")
  endif()
endfunction()

# `attempt`'s report.html as Chromium shows it: no console message, every chart's data
# points drawn, each block named after it present; a screenshot kept in ARTIFACTS.
function(expect_report_page attempt screenshot)
  execute_process(COMMAND "${PYTHON}" "${DATA}/check_report_page.py" "${attempt}/report.html"
                          "${ARTIFACTS}/${screenshot}" ${ARGN}
    RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE error)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${attempt}/report.html: ${output}${error}")
  endif()
  message(STATUS "${output}")
endfunction()

# `file` (called `label`) cut `cut` bytes short (inside an append) reads as one torn tail in summary, and
# decompress leaves the torn append out and keeps the records summary read, fewer than
# `all_records`.
function(expect_one_torn_tail file label cut all_records)
  get_filename_component(name "${file}" NAME)
  set(torn "${SCRATCH}/torn_${label}_${cut}")
  file(COPY "${file}" DESTINATION "${torn}")
  execute_process(COMMAND "${PYTHON}" -c "import os, sys; os.truncate(sys.argv[1], os.path.getsize(sys.argv[1]) - int(sys.argv[2]))"
                  "${torn}/${name}" ${cut})
  run_tool(EXPECT 0 ARGS summary --json "${torn}")
  expect_json_equal("${stdout}" 1 torn_lines)
  expect_contains("${stderr}" "torn tail at the end (")
  string(JSON torn_summary GET "${stdout}" groups 0 records)
  run_tool(EXPECT 0 ARGS decompress "${torn}" "${torn}_plain")
  expect_contains("${stdout}" "a torn append left out")
  run_tool(EXPECT 0 ARGS summary --json "${torn}_plain")
  expect_json_equal("${stdout}" 0 torn_lines)
  string(JSON plain_records GET "${stdout}" groups 0 records)
  if(NOT plain_records EQUAL torn_summary)
    message(FATAL_ERROR "${file} cut ${cut} short: decompressed, ${plain_records} records; summary read ${torn_summary}")
  endif()
  if(NOT torn_summary GREATER 0 OR NOT torn_summary LESS all_records)
    message(FATAL_ERROR "${file} cut ${cut} short: ${torn_summary} records read before the torn tail, of ${all_records}")
  endif()
endfunction()

function(expect_contains text part)
  string(FIND "${text}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected to find:\n  ${part}\nin:\n${text}")
  endif()
endfunction()

function(zstd_accepts file)
  execute_process(COMMAND "${ZSTD}" -q -t "${file}" RESULT_VARIABLE result ERROR_VARIABLE problem)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "zstd -t refuses ${file}: ${problem}")
  endif()
endfunction()

# DuckDB's counts and percentiles over `directory` equal summary's.
function(duckdb_agrees directory)
  if(NOT DUCKDB_CHECKS)
    message(STATUS "DuckDB part skipped (JSONL_DUCKDB_CHECKS is OFF): ${directory}")
    return()
  endif()
  execute_process(COMMAND "${NODE}" "${DUCKDB_CHECK}" "${TOOL}" "${directory}"
                  RESULT_VARIABLE result OUTPUT_VARIABLE checked ERROR_VARIABLE problem)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "summary and DuckDB disagree on ${directory}:\n${problem}${checked}")
  endif()
  message(STATUS "${checked}")
endfunction()

# Each of PARTS (after `directory`) is in `directory`.
function(expect_parts directory)
  foreach(part IN LISTS ARGN)
    if(NOT EXISTS "${directory}/${part}")
      message(FATAL_ERROR "the run directory has no ${part}")
    endif()
  endforeach()
endfunction()

function(expect_json_equal json expected)
  string(JSON actual GET "${json}" ${ARGN})
  if(NOT actual STREQUAL expected)
    message(FATAL_ERROR "${ARGN}: ${actual}, expected ${expected}")
  endif()
endfunction()

file(REMOVE_RECURSE "${SCRATCH}")
file(MAKE_DIRECTORY "${SCRATCH}")

if(CHECK STREQUAL "replay")
  # replay_expected.jsonl is what the reference server's writer wrote for the records in
  # replay_input.jsonl: 43 lines, one not JSON, five malformed ('NaN' is no object; no
  # 'server' phase; no 'request_id'; no 'ctx_dispatch_time'; a NaN value).
  run_tool(EXPECT 0 ARGS replay --kind server --output-dir "${SCRATCH}" "${DATA}/replay_input.jsonl")
  string(STRIP "${stdout}" written)
  file(READ "${written}" actual)
  file(READ "${DATA}/replay_expected.jsonl" expected)
  if(NOT actual STREQUAL expected)
    message(FATAL_ERROR "${written} differs from replay_expected.jsonl")
  endif()
  expect_contains("${stderr}" "line 11: not JSON: ")
  expect_contains("${stderr}" "Dropped malformed performance metrics record: record: expected an object, got number")
  expect_contains("${stderr}" "read 43, submitted 42, written 37, dropped 5 (malformed 5, serialize error 0, write error 0, abandoned 0), skipped 1\n")
  run_tool(EXPECT 2 ARGS replay --output-dir "${SCRATCH}" "${SCRATCH}/no-such-input.jsonl")
  expect_contains("${stderr}" "cannot read")

elseif(CHECK STREQUAL "loadgen")
  run_tool(EXPECT 0 ARGS loadgen --duration 1 --rate 2000 --producers 2 --seed 7 --output-dir "${SCRATCH}")
  if(NOT stdout MATCHES "written +([0-9]+)")
    message(FATAL_ERROR "no 'written' in the summary:\n${stdout}")
  endif()
  set(written ${CMAKE_MATCH_1})
  expect_contains("${stdout}" "submitted = written + unknown + dropped yes")
  file(GLOB files "${SCRATCH}/perf_metrics-server-*.jsonl")
  file(STRINGS "${files}" lines)
  list(LENGTH lines count)
  if(NOT count EQUAL written OR count LESS 100)
    message(FATAL_ERROR "${count} lines in ${files}, the summary says ${written}")
  endif()
  foreach(line IN LISTS lines)
    string(JSON request_id ERROR_VARIABLE error GET "${line}" request_id)
    string(JSON ctx_server ERROR_VARIABLE disagg_error GET "${line}" ctx_server)
    if(error AND disagg_error)
      message(FATAL_ERROR "not a performance-metrics record: ${line}")
    endif()
  endforeach()

elseif(CHECK STREQUAL "rotation_and_metrics")
  # Rotation by size, and the exposition read back by prometheus_client's parser.
  set(rotate 200000)
  run_tool(EXPECT 0 ARGS loadgen --duration 1 --rate 2000 --seed 3 --output-dir "${SCRATCH}/out"
           --rotate-bytes ${rotate} --metrics-file "${SCRATCH}/metrics.prom")
  if(NOT stdout MATCHES "written +([0-9]+)")
    message(FATAL_ERROR "no 'written' in the summary:\n${stdout}")
  endif()
  execute_process(COMMAND "${PYTHON}" "${DATA}/check_metrics.py" "${SCRATCH}/metrics.prom" "${SCRATCH}/out"
                          ${CMAKE_MATCH_1} ${rotate}
                  RESULT_VARIABLE result OUTPUT_VARIABLE checked ERROR_VARIABLE problem)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${problem}${checked}")
  endif()
  message(STATUS "${checked}")
  run_tool(EXPECT 2 ARGS loadgen --rotate-bytes 0)

elseif(CHECK STREQUAL "request_trace")
  # Request and response traces in an hour bucket; every line a JSON object of its kind.
  run_tool(EXPECT 0 ARGS loadgen --config request-trace --duration 1 --rate 400 --output-dir "${SCRATCH}")
  if(NOT stdout MATCHES "written +([0-9]+)")
    message(FATAL_ERROR "no 'written' in the summary:\n${stdout}")
  endif()
  set(written ${CMAKE_MATCH_1})
  file(GLOB requests "${SCRATCH}/*T[0-9][0-9]/requests-*.jsonl")
  file(GLOB responses "${SCRATCH}/*T[0-9][0-9]/responses-*.jsonl")
  if(NOT requests OR NOT responses)
    message(FATAL_ERROR "no requests-*.jsonl and responses-*.jsonl in an hour bucket under ${SCRATCH}")
  endif()
  set(count 0)
  foreach(pair IN ITEMS "requests;request" "responses;response")
    list(GET pair 0 kind)
    list(GET pair 1 event)
    file(STRINGS "${${kind}}" lines ENCODING UTF-8)
    foreach(line IN LISTS lines)
      string(JSON actual GET "${line}" event)
      if(NOT actual STREQUAL event)
        message(FATAL_ERROR "a ${event} file holds: ${line}")
      endif()
      math(EXPR count "${count} + 1")
    endforeach()
  endforeach()
  if(NOT count EQUAL written OR count LESS 100)
    message(FATAL_ERROR "${count} lines, the summary says ${written}")
  endif()

elseif(CHECK MATCHES "^verify_after_kill(_zstd)?$")
  set(compression none)
  if(CHECK STREQUAL "verify_after_kill_zstd")
    set(compression zstd)
  endif()
  execute_process(COMMAND "${PYTHON}" "${DATA}/check_verify_after_kill.py" "${TOOL}" "${SCRATCH}" ${compression}
                  "${ZSTD}" RESULT_VARIABLE result OUTPUT_VARIABLE checked ERROR_VARIABLE problem)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${problem}${checked}")
  endif()
  message(STATUS "${checked}")

elseif(CHECK STREQUAL "duckdb")
  # Several processes of three server kinds write one directory (one file over 32 MiB,
  # so that it is read in two pieces); DuckDB's counts and nearest-rank percentiles of
  # every metric, from one SQL query over it, equal summary's; and summary on two
  # threads says what it says on one.
  foreach(run IN ITEMS "server;1;0.0;20000" "server;2;0.5;1500" "ctx;3;0.0;1500" "gen;4;1.0;1500")
    list(GET run 0 kind)
    list(GET run 1 seed)
    list(GET run 2 disagg)
    list(GET run 3 rate)
    run_tool(EXPECT 0 ARGS loadgen --duration 1 --rate ${rate} --kind ${kind} --seed ${seed}
             --disagg-fraction ${disagg} --output-dir "${SCRATCH}")
  endforeach()
  run_tool(EXPECT 0 ARGS summary --json --threads 1 "${SCRATCH}")
  set(sequential "${stdout}")
  run_tool(EXPECT 0 ARGS summary --json --threads 2 "${SCRATCH}" --html "${SCRATCH}/report.html")
  if(NOT stdout STREQUAL sequential)
    message(FATAL_ERROR "summary on two threads differs from one:\n${stdout}\n${sequential}")
  endif()
  # Queue times span four decades: their histograms go on a log axis, the TTFTs' do not.
  file(READ "${SCRATCH}/report.html" html)
  string(REGEX MATCHALL "queue_ms \\([0-9]+ samples\\) \\(log scale\\)" log_queue "${html}")
  string(REGEX MATCHALL "ttft_ms \\([0-9]+ samples\\) \\(log scale\\)" log_ttft "${html}")
  if(NOT log_queue OR log_ttft)
    message(FATAL_ERROR "expected queue_ms on a log axis and ttft_ms on a linear one")
  endif()
  duckdb_agrees("${SCRATCH}")

  # A line past summary's bound (16 MiB) and past DuckDB's (its maximum_object_size, 16
  # MiB, read into a buffer twice that): summary reports it and reads the rest; DuckDB
  # fails the whole query, ignore_errors notwithstanding, as docs/at-scale.md says.
  set(long "${SCRATCH}/long")
  file(MAKE_DIRECTORY "${long}")
  set(pad_mib 40)
  set(write_long_line "import sys; n = int(sys.argv[2]) << 20; open(sys.argv[1], 'wb').write(\
b'{\"status\": \"ok\"}\\n{\"pad\": \"' + b'a' * n + b'\"}\\n{\"status\": \"ok\"}\\n')")
  execute_process(COMMAND "${PYTHON}" -c "${write_long_line}" "${long}/perf_metrics-server-h-1-20260101T000000Z.jsonl"
                  ${pad_mib} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "could not write the long line")
  endif()
  string(LENGTH "{\"pad\": \"\"}" framing)
  math(EXPR long_bytes "(${pad_mib} << 20) + ${framing}")
  run_tool(EXPECT 0 ARGS summary --json "${long}")
  expect_json_equal("${stdout}" 1 bad_lines)
  expect_json_equal("${stdout}" 2 groups 0 records)
  expect_contains("${stderr}" "perf_metrics-server-h-1-20260101T000000Z.jsonl:2: ${long_bytes} bytes, longer than the 16777216")
  if(DUCKDB_CHECKS)
    get_filename_component(duckdb_tools "${DUCKDB_CHECK}" DIRECTORY)
    execute_process(COMMAND "${NODE}" "${duckdb_tools}/percentiles.mjs" "${long}"
                    RESULT_VARIABLE result OUTPUT_VARIABLE figures ERROR_VARIABLE problem)
    if(result EQUAL 0)
      message(FATAL_ERROR "DuckDB read a 40 MiB line, which docs/at-scale.md says it refuses:\n${figures}")
    endif()
    expect_contains("${problem}" "maximum_object_size")
  endif()

elseif(CHECK STREQUAL "summary")
  # Ten records over two files, queue times k/1024 s (k = 1..10), TTFT twice that, E2E
  # ten times; one bad line, one torn last line. Nearest rank: p50 is the 5th value,
  # p90 the 9th, p99 the 10th. In ms: k * 0.9765625.
  run_tool(EXPECT 0 ARGS summary --json "${DATA}/summary_input" --html "${SCRATCH}/report.html")
  expect_json_equal("${stdout}" 2 files)
  expect_json_equal("${stdout}" 1 bad_lines)
  expect_json_equal("${stdout}" 1 torn_lines)
  expect_json_equal("${stdout}" 10 groups 0 records)
  expect_json_equal("${stdout}" 4.8828125 groups 0 metrics queue_ms p50)
  expect_json_equal("${stdout}" 8.7890625 groups 0 metrics queue_ms p90)
  expect_json_equal("${stdout}" 9.765625 groups 0 metrics queue_ms p99)
  expect_json_equal("${stdout}" 19.53125 groups 0 metrics ttft_ms max)
  expect_json_equal("${stdout}" 48.828125 groups 0 metrics e2e_ms p50)
  expect_json_equal("${stdout}" 0.25 groups 0 kv_cache_reuse_ratio)
  expect_contains("${stderr}" "perf_metrics-server-hostb-2-20260101T000001Z.jsonl:3: not JSON")
  expect_contains("${stderr}" "perf_metrics-server-hostb-2-20260101T000001Z.jsonl:6: torn last line")
  run_tool(EXPECT 0 ARGS summary "${DATA}/summary_input")
  expect_contains("${stdout}" "server / complete: 10 records")
  file(READ "${SCRATCH}/report.html" html)
  string(REGEX MATCHALL "<svg " opened "${html}")
  string(REGEX MATCHALL "</svg>" closed "${html}")
  list(LENGTH opened svgs)
  list(LENGTH closed ends)
  if(NOT svgs EQUAL 4 OR NOT ends EQUAL 4)  # records over time + three latency histograms
    message(FATAL_ERROR "${svgs} <svg> and ${ends} </svg>, expected 4 each")
  endif()
  if(NOT html MATCHES "^<!DOCTYPE html>" OR NOT html MATCHES "</html>\n$" OR html MATCHES "<script|https?:")
    message(FATAL_ERROR "not a self-contained HTML page")
  endif()
  # A percentile table per group; p50, p90 and p99 marked on each of the three
  # latency histograms; value ticks. (queue_ms here spans one decade: a linear axis.)
  expect_contains("${html}" "<tr><td>queue_ms</td><td>10</td><td>4.883</td><td>8.789</td><td>9.766</td><td>9.766</td></tr>")
  string(REGEX MATCHALL "fill=\"#c0392b\">p(50|90|99)</text>" marks "${html}")
  list(LENGTH marks mark_count)
  if(NOT mark_count EQUAL 9)
    message(FATAL_ERROR "${mark_count} percentile marks, expected 9")
  endif()
  expect_contains("${html}" "text-anchor=\"middle\">2</text>")

elseif(CHECK STREQUAL "compressed")
  # The same records through a plain and a compressed writer: zstd -t accepts the file,
  # and zstd -d gives the plain file's bytes.
  run_tool(EXPECT 0 ARGS replay --output-dir "${SCRATCH}/plain" "${DATA}/replay_input.jsonl")
  string(STRIP "${stdout}" plain_file)
  run_tool(EXPECT 0 ARGS replay --compression zstd:3 --output-dir "${SCRATCH}/replayed" "${DATA}/replay_input.jsonl")
  string(STRIP "${stdout}" packed_file)
  if(NOT packed_file MATCHES "\\.jsonl\\.zst$")
    message(FATAL_ERROR "a compressed file named ${packed_file}")
  endif()
  zstd_accepts("${packed_file}")
  execute_process(COMMAND "${ZSTD}" -q -d -c "${packed_file}" OUTPUT_VARIABLE decoded RESULT_VARIABLE result)
  file(READ "${plain_file}" plain)
  if(NOT result EQUAL 0 OR NOT decoded STREQUAL plain)
    message(FATAL_ERROR "${packed_file} does not decode to ${plain_file}")
  endif()

  # A loadgen's compressed files (over 4 MiB, so summary reads one in several pieces):
  # zstd -t accepts each; summary gives on them, on one thread or two, what it gives on
  # their content uncompressed; DuckDB reads them and agrees with summary.
  set(packed "${SCRATCH}/packed")
  run_tool(EXPECT 0 ARGS loadgen --duration 1 --rate 20000 --seed 3 --compression zstd --output-dir "${packed}")
  expect_contains("${stdout}" "submitted = written + unknown + dropped yes")
  file(GLOB packed_files "${packed}/perf_metrics-server-*.jsonl.zst")
  file(MAKE_DIRECTORY "${SCRATCH}/unpacked")
  foreach(file IN LISTS packed_files)
    zstd_accepts("${file}")
    get_filename_component(name "${file}" NAME)
    string(REGEX REPLACE "\\.zst$" "" name "${name}")
    execute_process(COMMAND "${ZSTD}" -q -d "${file}" -o "${SCRATCH}/unpacked/${name}" RESULT_VARIABLE result)
    if(NOT result EQUAL 0)
      message(FATAL_ERROR "zstd -d ${file} failed")
    endif()
  endforeach()
  run_tool(EXPECT 0 ARGS summary --json --threads 1 "${SCRATCH}/unpacked")
  set(uncompressed "${stdout}")
  # decompress gives the bytes zstd -d gives, under the same names.
  run_tool(EXPECT 0 ARGS decompress "${packed}" "${SCRATCH}/decompressed")
  foreach(file IN LISTS packed_files)
    get_filename_component(name "${file}" NAME)
    string(REGEX REPLACE "\\.zst$" "" name "${name}")
    file(READ "${SCRATCH}/unpacked/${name}" by_zstd)
    file(READ "${SCRATCH}/decompressed/${name}" by_us)
    if(NOT by_us STREQUAL by_zstd)
      message(FATAL_ERROR "decompress of ${file} differs from zstd -d")
    endif()
  endforeach()
  foreach(threads IN ITEMS 1 2)
    run_tool(EXPECT 0 ARGS summary --json --threads ${threads} "${packed}")
    if(NOT stdout STREQUAL uncompressed)
      message(FATAL_ERROR "summary of the compressed files (${threads} threads) differs:\n${stdout}\n${uncompressed}")
    endif()
  endforeach()
  duckdb_agrees("${packed}")

  # A durable document naming a compressed file under "deleting" (retention removing it)
  # names the plain file once decompressed.
  set(durable "${SCRATCH}/durable_packed")
  run_tool(EXPECT 0 ARGS loadgen --duration 1 --rate 2000 --seed 3 --compression zstd --durability on
           --output-dir "${durable}")
  file(GLOB documents "${durable}/_writer/*.json")
  list(GET documents 0 document)
  file(READ "${document}" books)
  string(JSON books SET "${books}" deleting "[\"perf_metrics-server-gone.jsonl.zst\"]")
  file(WRITE "${document}" "${books}")
  run_tool(EXPECT 0 ARGS decompress "${durable}" "${SCRATCH}/durable_plain")
  get_filename_component(name "${document}" NAME)
  file(READ "${SCRATCH}/durable_plain/_writer/${name}" books)
  string(JSON deleting GET "${books}" deleting 0)
  if(NOT deleting STREQUAL "perf_metrics-server-gone.jsonl")
    message(FATAL_ERROR "decompress left \"deleting\" naming ${deleting}")
  endif()

  # A file cut short inside an append, wherever the cut falls among the writer's blocks
  # (their layout is the machine's speed's: a slow run writes appends that span blocks):
  # one torn tail, and the records decompress keeps. The cuts fall inside blocks, chosen
  # from the file's structure. The same lines in zstd's own single frame make an append
  # that spans blocks on any machine: its 128 KiB blocks end mid-line.
  list(GET packed_files 0 whole)
  get_filename_component(name "${whole}" NAME)
  string(REGEX REPLACE "\\.zst$" "" plain_name "${name}")
  file(MAKE_DIRECTORY "${SCRATCH}/spanning")
  execute_process(COMMAND "${ZSTD}" -q -c "${SCRATCH}/unpacked/${plain_name}" OUTPUT_FILE "${SCRATCH}/spanning/${name}"
                  RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "zstd -c ${plain_name} failed")
  endif()
  string(JSON all_records GET "${uncompressed}" groups 0 records)
  foreach(label IN ITEMS writer spanning)
    set(source "${whole}")
    if(label STREQUAL "spanning")
      set(source "${SCRATCH}/spanning/${name}")
    endif()
    execute_process(COMMAND "${PYTHON}" "${DATA}/zstd_cut_points.py" "${source}" 1 2 5
                    OUTPUT_VARIABLE cuts RESULT_VARIABLE result ERROR_VARIABLE problem)
    if(NOT result EQUAL 0)
      message(FATAL_ERROR "cut points of ${source}: ${problem}")
    endif()
    string(REGEX REPLACE "\n$" "" cuts "${cuts}")
    string(REPLACE "\n" ";" cuts "${cuts}")
    foreach(cut IN LISTS cuts)
      expect_one_torn_tail("${source}" ${label} ${cut} ${all_records})
    endforeach()
  endforeach()

  # A compressed loadgen killed (SIGKILL) once it has written 1 MiB, many frames:
  # summary reads every whole frame of what it left, and a torn last frame, if the kill
  # left one, counts as torn.
  execute_process(COMMAND "${PYTHON}" "${DATA}/kill_once_written.py" "${SCRATCH}/killed" 1048576
                          "${TOOL}" loadgen --duration 600 --rate 20000 --compression zstd
                          --output-dir "${SCRATCH}/killed"
                  RESULT_VARIABLE result ERROR_VARIABLE problem OUTPUT_QUIET)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "the compressed loadgen to kill: ${problem}")
  endif()
  run_tool(EXPECT 0 ARGS summary --json "${SCRATCH}/killed")
  expect_json_equal("${stdout}" 0 bad_lines)
  string(JSON killed_records GET "${stdout}" groups 0 records)
  string(JSON killed_torn GET "${stdout}" torn_lines)
  if(NOT killed_records GREATER 1000 OR killed_torn GREATER 1)
    message(FATAL_ERROR "a killed writer's file: ${killed_records} records, ${killed_torn} torn")
  endif()

  # Request traces: a file per kind and writer, named apart from any predecessor's.
  run_tool(EXPECT 0 ARGS loadgen --config request-trace --compression zstd --duration 1 --rate 400
           --output-dir "${SCRATCH}/traces")
  file(GLOB traces "${SCRATCH}/traces/*T[0-9][0-9]/*.jsonl.zst")
  list(LENGTH traces trace_count)
  if(trace_count LESS 2)
    message(FATAL_ERROR "expected request and response files, found: ${traces}")
  endif()
  foreach(file IN LISTS traces)
    if(NOT file MATCHES "/(requests|responses)-[0-9]+-[0-9a-f]+\\.jsonl\\.zst$")
      message(FATAL_ERROR "a trace file named ${file}")
    endif()
    zstd_accepts("${file}")
  endforeach()
  run_tool(EXPECT 0 ARGS verify "${SCRATCH}/traces")

elseif(CHECK STREQUAL "usage")
  run_tool(EXPECT 2 ARGS loadgen --producers 0)
  run_tool(EXPECT 2 ARGS loadgen --rate fast)
  expect_contains("${stderr}" "--rate: expected a positive number")
  run_tool(EXPECT 2 ARGS replay --no-such-option)
  run_tool(EXPECT 2 ARGS summary)
  run_tool(EXPECT 0 ARGS summary --help)
  expect_contains("${stdout}" "--html")
  run_tool(EXPECT 2 ARGS verify)
  run_tool(EXPECT 2 ARGS verify "${SCRATCH}/no-such-directory")
  expect_contains("${stderr}" "no-such-directory")
  run_tool(EXPECT 2 ARGS loadgen --durability sometimes)
  run_tool(EXPECT 2 ARGS loadgen --compression lz4)
  expect_contains("${stderr}" "--compression: expected 'none', 'zstd' or 'zstd:LEVEL', got 'lz4'")
  run_tool(EXPECT 2 ARGS loadgen --compression zstd:0 --output-dir "${SCRATCH}")
  expect_contains("${stderr}" "zstd level 0 is out of range")
  # One parser for every command's --compression: a level with trailing text is refused.
  foreach(command IN ITEMS loadgen replay serve fleet)
    run_tool(EXPECT 2 ARGS ${command} --compression zstd:3x)
    expect_contains("${stderr}" "--compression: expected 'none', 'zstd' or 'zstd:LEVEL', got 'zstd:3x'")
  endforeach()
  run_tool(EXPECT 2 ARGS serve --queue-ms gamma:3)
  expect_contains("${stderr}" "distribution 'gamma:3': expected const:X")
  run_tool(EXPECT 2 ARGS fleet --itl-ms uniform:5:1)
  expect_contains("${stderr}" "HIGH is below LOW")
  run_tool(EXPECT 2 ARGS client --route chatty)

elseif(CHECK STREQUAL "fleet_join")
  # A short aggregated fleet on every route, then this project's own join over its run
  # directory: every answered request joins its perf record, usage on every completed
  # response, trace E2E within a few ms of what the client measured, no negative decode.
  run_tool(EXPECT 0 ARGS fleet --rate 40 --duration 3 --output-dir "${SCRATCH}/run"
                         --route chat --route completions --route responses --route messages --stream-fraction 0.5)
  set(attempt "${SCRATCH}/run/attempt-001")
  expect_contains("${stdout}" "all balance: yes; all files verify: yes")
  expect_parts("${attempt}" perf_metrics request_trace client.json report.html server.log requests.csv)
  expect_contains("${stdout}" "requests.csv: ${attempt}/requests.csv (120 rows)")
  expect_contains("${stdout}" "report: ${attempt}/report.html")
  expect_report_page("${attempt}" report-aggregated.png metrics occupancy phases tokens routes client causes)
  # A request line written twice (a retried append) is one row of requests.csv, and join
  # says so.
  file(COPY "${attempt}/" DESTINATION "${SCRATCH}/repeated")
  file(GLOB_RECURSE request_files "${SCRATCH}/repeated/request_trace/*/requests-*.jsonl")
  list(GET request_files 0 request_file)
  execute_process(COMMAND "${PYTHON}" -c "import sys; f = open(sys.argv[1], 'r+b'); line = f.readline(); f.seek(0, 2); f.write(line)"
                          "${request_file}")
  run_tool(EXPECT 0 ARGS join "${SCRATCH}/repeated" --csv "${SCRATCH}/repeated/again.csv")
  expect_contains("${stdout}" "join: 121 request lines")
  expect_contains("${stdout}" "again.csv (120 rows)")
  expect_requests_csv("${attempt}" 120 rid started_at finished_at status stream isl_total osl ttft_ms e2e_ms decode_ms
                      prefill_queue_ms prefill_ms ctx_blocks_total session)
  run_tool(EXPECT 0 ARGS join "${attempt}" --client-results "${attempt}/client.json" --json)
  set(join "${stdout}")
  foreach(field IN ITEMS request_lines accepted response_lines completed completed_joined usage_found perf_records)
    expect_json_equal("${join}" 120 ${field})
  endforeach()
  foreach(field IN ITEMS rejected_400 accepted_without_response perf_records_unjoined bad_lines client_disconnected errors)
    expect_json_equal("${join}" 0 ${field})
  endforeach()
  expect_json_equal("${join}" 120 client_matched)
  string(JSON decode GET "${join}" min_decode_ms)
  string(JSON median GET "${join}" median_e2e_difference_ms)
  string(JSON largest GET "${join}" max_abs_e2e_difference_ms)
  # A few ms here; the bounds are generous for sanitizer builds and loaded machines.
  if(decode LESS 0 OR median GREATER 10 OR largest GREATER 50)
    message(FATAL_ERROR "decode min ${decode} ms (never negative); client - trace E2E: median ${median} ms, "
                        "largest ${largest} ms (a few)")
  endif()
  # A second fleet in the same run directory is the next attempt, as a restart is.
  run_tool(EXPECT 0 ARGS fleet --rate 5 --duration 1 --output-dir "${SCRATCH}/run")
  if(NOT EXISTS "${SCRATCH}/run/attempt-002/perf_metrics")
    message(FATAL_ERROR "a second fleet did not start attempt-002")
  endif()
  # A client that keeps at most one request open counts those due meanwhile unsent, not
  # delayed: the first is answered after a second and a half, the other nine fall due
  # within half a second, whatever the machine's speed.
  run_tool(EXPECT 0 ARGS fleet --rate 20 --duration 0.5 --ttft-ms const:1500 --max-in-flight 1
                         --output-dir "${SCRATCH}/one_open")
  expect_contains("${stdout}" "unsent=9")

elseif(CHECK STREQUAL "fleet_join_disaggregated")
  # A disaggregated fleet, one context and one generation worker behind the proxy, then
  # this project's own join over its run directory: every answered request joins the
  # proxy's, the context worker's and the generation worker's record on its
  # disagg_request_id, usage on every completed response, no negative span.
  run_tool(EXPECT 0 ARGS fleet --mode disaggregated --ctx 1 --gen 1 --rate 40 --duration 3
                         --output-dir "${SCRATCH}/run" --route chat --route completions --route messages --stream-fraction 0.5)
  set(attempt "${SCRATCH}/run/attempt-001")
  expect_contains("${stdout}" "all balance: yes; all files verify: yes")
  foreach(kind IN ITEMS disagg context generation)
    expect_contains("${stdout}" "${kind} / complete: 120 records")
  endforeach()
  expect_parts("${attempt}" ctx-0.log gen-0.log server.log requests.csv)
  expect_requests_csv("${attempt}" 120 rid ttft_ms e2e_ms proxy_dispatch_ms prefill_ms kv_transfer_ms gen_decode_ms
                      ctx_blocks_total gen_blocks_total)
  expect_report_page("${attempt}" report-disaggregated.png metrics occupancy phases hops tokens routes client causes)
  run_tool(EXPECT 0 ARGS join "${attempt}" --client-results "${attempt}/client.json" --json)
  set(join "${stdout}")
  foreach(field IN ITEMS request_lines completed completed_joined usage_found disaggregated joined_ctx gen_expected
                         joined_gen client_matched)
    expect_json_equal("${join}" 120 ${field})
  endforeach()
  expect_json_equal("${join}" 360 perf_records)
  foreach(field IN ITEMS perf_records_unjoined bad_lines errors accepted_without_response)
    expect_json_equal("${join}" 0 ${field})
  endforeach()
  string(JSON decode GET "${join}" min_decode_ms)
  string(JSON span GET "${join}" min_hop_span_ms)
  if(NOT decode MATCHES "^[0-9.eE+-]+$" OR NOT span MATCHES "^[0-9.eE+-]+$" OR decode LESS 0 OR span LESS 0)
    message(FATAL_ERROR "decode min ${decode} ms, hop span min ${span} ms (never negative)")
  endif()
else()
  message(FATAL_ERROR "unknown CHECK ${CHECK}")
endif()
file(REMOVE_RECURSE "${SCRATCH}")
