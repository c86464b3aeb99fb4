// Admission on its own: which submits are taken, how the drain waits for them, and the
// marks a flush waits on. One case per behaviour.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "writer_fixture.hpp"

using Admission = jsonl::detail::Admission;
using Verdict = Admission::Verdict;
using namespace std::chrono_literals;

namespace {

bool admitted(Admission::Reservation reservation) { return reservation.admitted(); }

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
  BOOST_TEST((admission.reserve().verdict == Verdict::refused_full));
  BOOST_TEST(admission.depth() == 3u);
  admission.release(1);
  BOOST_TEST(admitted(admission.reserve()));
}

BOOST_AUTO_TEST_CASE(tickets_number_the_admitted_records_in_order) {
  Admission admission(2, true);
  BOOST_TEST(admission.reserve().ticket == 0u);
  BOOST_TEST(admission.reserve().ticket == 1u);
  admission.reserve();  // refused: full
  admission.release(1);
  BOOST_TEST(admission.reserve().ticket == 2u);  // ticket 0's slot, released
}

BOOST_AUTO_TEST_CASE(a_ticket_is_admitted_only_once_the_ticket_a_capacity_before_it_is_released) {
  Admission admission(4, true);
  std::atomic<bool> slot_still_held{false};
  std::vector<std::thread> producers;
  std::atomic<bool> stop{false};
  for (int p = 0; p < 2; ++p) {
    producers.emplace_back([&] {
      while (!stop) {
        const Admission::Reservation reservation = admission.reserve();
        if (!reservation.admitted()) continue;
        // Its slot's previous ticket must be released already.
        if (reservation.ticket >= 4 && admission.released() < reservation.ticket - 3) slot_still_held = true;
      }
    });
  }
  for (int round = 0; round < 2000; ++round) {
    if (admission.depth() > 0) admission.release(1);
  }
  stop = true;
  for (std::thread& producer : producers) producer.join();
  BOOST_TEST(!slot_still_held.load());
  BOOST_TEST(admission.depth() <= 4u);
}

BOOST_AUTO_TEST_CASE(refuses_as_closed_before_it_accepts_and_after_it_stops) {
  Admission never(4, false);
  BOOST_TEST((never.reserve().verdict == Verdict::refused_closed));
  Admission stopped(4, true);
  stopped.stop_accepting();
  BOOST_TEST(!stopped.accepting());
  BOOST_TEST((stopped.reserve().verdict == Verdict::refused_closed));
  BOOST_TEST((stopped.wait_for_room().verdict == Verdict::refused_closed));
}

BOOST_AUTO_TEST_CASE(release_returns_the_mark_of_every_record_released_so_far) {
  Admission admission(8, true);
  for (int i = 0; i < 5; ++i) admission.reserve();
  BOOST_TEST(admission.release(2) == 2u);
  BOOST_TEST(admission.release(3) == 5u);
  admission.reserve();
  BOOST_TEST(admission.admitted() == 6u);  // the next ticket: released, plus the depth
  BOOST_TEST(admission.depth() == 1u);
}

BOOST_AUTO_TEST_CASE(a_submit_waiting_for_room_is_admitted_once_the_drain_releases) {
  Admission admission(2, true);
  admission.reserve();
  admission.reserve();
  std::atomic<Verdict> verdict{Verdict::refused_full};
  std::thread submit([&] { verdict = admission.wait_for_room().verdict; });
  yield_until([&] { return admission.waiting() == 1; });
  admission.release(2);  // half empty: waiting submits are woken
  submit.join();
  BOOST_TEST((verdict.load() == Verdict::admitted));
  BOOST_TEST(admission.waiting() == 0u);
}

BOOST_AUTO_TEST_CASE(stopping_wakes_a_submit_waiting_for_room_and_refuses_it) {
  Admission admission(1, true);
  admission.reserve();
  std::atomic<Verdict> verdict{Verdict::admitted};
  std::thread submit([&] { verdict = admission.wait_for_room().verdict; });
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
  // Until the drain has set its idle flag a submit is plainly admitted; release it, as
  // the drain would.
  Verdict verdict;
  while ((verdict = admission.reserve().verdict) == Verdict::admitted) {
    admission.release(1);
    std::this_thread::yield();
  }
  BOOST_TEST((verdict == Verdict::admitted_wake_drain));
  woken = true;
  admission.wake_drain();
  drain.join();
  BOOST_TEST((admission.reserve().verdict == Verdict::admitted));  // the drain is awake: no second wake-up
}

BOOST_AUTO_TEST_CASE(a_drain_that_finds_the_queue_empty_naps_for_its_linger) {
  Admission admission(16, true, 300ms);
  const auto start = std::chrono::steady_clock::now();
  admission.await_records(1);  // nothing comes, and a nap is not cut short by anything but a full half
  BOOST_TEST((std::chrono::steady_clock::now() - start >= 300ms));
}

BOOST_AUTO_TEST_CASE(a_nap_ends_when_a_flush_asks) {
  Admission admission(16, true, std::chrono::hours(1));
  std::thread drain([&] { admission.await_records(1); });  // naps for an hour unless its nap is ended
  while (!admission.end_nap()) std::this_thread::yield();
  drain.join();
  BOOST_TEST(!admission.end_nap());  // awake: nothing to end
}

BOOST_AUTO_TEST_CASE(a_drain_waiting_for_records_returns_once_admission_stops) {
  Admission admission(16, true);
  std::thread drain([&] { admission.await_records(1000); });
  admission.stop_accepting();
  drain.join();
  BOOST_TEST(!admission.accepting());
}

// A drain holding records for a fuller round (Admission::hold), as a compressed writer's
// does: one record is admitted, and not released, before each hold.
BOOST_AUTO_TEST_CASE(a_holding_drain_is_woken_once_its_target_is_admitted) {
  Admission admission(16, true, std::chrono::hours(1), 4);
  admission.reserve();
  const auto start = std::chrono::steady_clock::now();
  std::thread drain([&] { admission.hold(start + 60s); });
  yield_until([&] { return admission.drain_waits(); });
  BOOST_TEST((admission.reserve().verdict == Verdict::admitted));
  BOOST_TEST((admission.reserve().verdict == Verdict::admitted));
  BOOST_TEST((admission.reserve().verdict == Verdict::admitted_wake_drain));  // the target's last
  admission.wake_drain();
  drain.join();
  BOOST_TEST((std::chrono::steady_clock::now() - start < 30s));
}

BOOST_AUTO_TEST_CASE(a_holding_drain_lets_go_at_its_deadline) {
  Admission admission(16, true, std::chrono::hours(1), 4);
  admission.reserve();
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST(admission.hold(start + 300ms));
  BOOST_TEST((std::chrono::steady_clock::now() - start >= 300ms));
}

BOOST_AUTO_TEST_CASE(a_flush_takes_held_records_at_once) {
  Admission admission(16, true, std::chrono::hours(1), 4);
  admission.reserve();
  const auto start = std::chrono::steady_clock::now();
  std::thread drain([&] { admission.hold(start + 60s); });
  yield_until([&] { return admission.drain_waits(); });
  admission.want(admission.admitted());
  drain.join();
  BOOST_TEST((std::chrono::steady_clock::now() - start < 30s));
  BOOST_TEST(!admission.hold(start + 60s));  // wanted: no longer held
}

BOOST_AUTO_TEST_CASE(records_admitted_after_a_flush_are_held_again) {
  Admission admission(16, true, std::chrono::hours(1), 4);
  admission.reserve();
  admission.want(admission.admitted());
  admission.release(1);
  admission.reserve();
  const auto start = std::chrono::steady_clock::now();
  BOOST_TEST(admission.hold(start + 300ms));
  BOOST_TEST((std::chrono::steady_clock::now() - start >= 300ms));
}

BOOST_AUTO_TEST_CASE(a_holding_drain_lets_go_once_admission_stops) {
  Admission admission(16, true, std::chrono::hours(1), 4);
  admission.reserve();
  const auto start = std::chrono::steady_clock::now();
  std::thread drain([&] { admission.hold(start + 60s); });
  yield_until([&] { return admission.drain_waits(); });
  admission.stop_accepting();
  drain.join();
  BOOST_TEST((std::chrono::steady_clock::now() - start < 30s));
  BOOST_TEST(!admission.hold(start + 60s));  // closing: nothing is held
}

BOOST_AUTO_TEST_CASE(a_drain_holds_out_for_its_target_or_half_the_queue_when_that_is_less) {
  BOOST_TEST(Admission(16, true, 1ms, 4).hold_target() == 4u);
  BOOST_TEST(Admission(5, true, 1ms, 64).hold_target() == 3u);
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
