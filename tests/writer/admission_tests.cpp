// Admission on its own: which submits are taken, how the drain waits for them, and the
// marks a flush waits on. One case per behaviour.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "writer_fixture.hpp"

using Admission = jsonl::detail::Admission;
using Verdict = Admission::Verdict;
using namespace std::chrono_literals;

namespace {

bool admitted(Verdict verdict) { return verdict == Verdict::admitted || verdict == Verdict::admitted_wake_drain; }

// Spins (yielding) until `done` holds: the state a test waits for is set by one
// compare-and-swap on the other thread, with no signal of its own.
template <class Done>
void yield_until(Done done) {
  while (!done()) std::this_thread::yield();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(admission)

BOOST_AUTO_TEST_CASE(admits_up_to_its_capacity_then_refuses_as_full) {
  Admission admission(3, true);
  for (int i = 0; i < 3; ++i) BOOST_TEST(admitted(admission.reserve()));
  BOOST_TEST((admission.reserve() == Verdict::refused_full));
  BOOST_TEST(admission.depth() == 3u);
  admission.release(1);
  BOOST_TEST(admitted(admission.reserve()));
}

BOOST_AUTO_TEST_CASE(a_slot_given_back_is_free_again) {
  Admission admission(1, true);
  BOOST_TEST(admitted(admission.reserve()));
  admission.give_back();
  BOOST_TEST(admission.depth() == 0u);
  BOOST_TEST(admitted(admission.reserve()));
}

BOOST_AUTO_TEST_CASE(refuses_as_closed_before_it_accepts_and_after_it_stops) {
  Admission never(4, false);
  BOOST_TEST((never.reserve() == Verdict::refused_closed));
  Admission stopped(4, true);
  stopped.stop_accepting();
  BOOST_TEST(!stopped.accepting());
  BOOST_TEST((stopped.reserve() == Verdict::refused_closed));
  BOOST_TEST((stopped.wait_for_room() == Verdict::refused_closed));
}

BOOST_AUTO_TEST_CASE(release_returns_the_mark_of_every_record_released_so_far) {
  Admission admission(8, true);
  for (int i = 0; i < 5; ++i) admission.reserve();
  BOOST_TEST(admission.release(2) == 2u);
  BOOST_TEST(admission.release(3) == 5u);
  admission.reserve();
  BOOST_TEST(admission.admitted() == 6u);  // released, plus the depth
  BOOST_TEST(admission.depth() == 1u);
}

BOOST_AUTO_TEST_CASE(a_submit_waiting_for_room_is_admitted_once_the_drain_releases) {
  Admission admission(2, true);
  admission.reserve();
  admission.reserve();
  std::atomic<Verdict> verdict{Verdict::refused_full};
  std::thread submit([&] { verdict = admission.wait_for_room(); });
  yield_until([&] { return admission.waiting() == 1; });
  admission.release(2);  // half empty: waiting submits are woken
  submit.join();
  BOOST_TEST(admitted(verdict.load()));
  BOOST_TEST(admission.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(stopping_wakes_a_submit_waiting_for_room_and_refuses_it) {
  Admission admission(1, true);
  admission.reserve();
  std::atomic<Verdict> verdict{Verdict::admitted};
  std::thread submit([&] { verdict = admission.wait_for_room(); });
  yield_until([&] { return admission.waiting() == 1; });
  admission.stop_accepting();
  submit.join();
  BOOST_TEST((verdict.load() == Verdict::refused_closed));
}

BOOST_AUTO_TEST_CASE(the_first_submit_after_the_drain_went_idle_is_told_to_wake_it) {
  Admission admission(16, true);
  std::atomic<bool> woken{false};
  // Long idle: it sleeps until woken (and returns at once while a record is admitted).
  std::thread drain([&] {
    while (!woken) admission.await_records(1000);
  });
  // Until the drain has set its idle flag a submit is plainly admitted; give it back.
  Verdict verdict;
  while ((verdict = admission.reserve()) == Verdict::admitted) {
    admission.give_back();
    std::this_thread::yield();
  }
  BOOST_TEST((verdict == Verdict::admitted_wake_drain));
  woken = true;
  admission.wake_drain();
  drain.join();
  BOOST_TEST((admission.reserve() == Verdict::admitted));  // the drain is awake: no second wake-up
}

BOOST_AUTO_TEST_CASE(a_drain_waiting_for_records_returns_once_admission_stops) {
  Admission admission(16, true);
  std::thread drain([&] { admission.await_records(1000); });
  admission.stop_accepting();
  drain.join();
  BOOST_TEST(!admission.accepting());
}

BOOST_AUTO_TEST_CASE(a_flush_waits_for_the_mark_to_pass_its_records) {
  Admission admission(8, true);
  for (int i = 0; i < 4; ++i) admission.reserve();
  const std::uint64_t wanted = admission.admitted();
  BOOST_TEST(!admission.await_finished(wanted, std::chrono::steady_clock::now() + 10ms));
  admission.finished_through(admission.release(4) - 1);
  BOOST_TEST(!admission.await_finished(wanted, std::chrono::steady_clock::now() + 10ms));
  std::thread worker([&] { admission.finished_through(4); });
  BOOST_TEST(admission.await_finished(wanted, std::chrono::steady_clock::now() + 60s));
  worker.join();
}

BOOST_AUTO_TEST_CASE(finished_all_passes_every_mark) {
  Admission admission(8, true);
  admission.finished_all();
  BOOST_TEST(admission.await_finished(UINT64_MAX - 1, std::chrono::steady_clock::now()));
}

BOOST_AUTO_TEST_SUITE_END()
