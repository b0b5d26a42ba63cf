// models::InFlightTriggers: a streamed program keeps each DMA trigger until its transfer is
// delivered, whatever order the queues deliver in.
#include "models/dma/in_flight_triggers.hpp"

#include <catch2/catch.hpp>

using trnsim::Engine;
using trnsim::models::InFlightTriggers;

TEST_CASE("a streamed program keeps the oldest DMA trigger whose transfer is in flight") {
  InFlightTriggers t;
  CHECK(t.oldest(Engine::sync, 100) == 100);  // none in flight: the engine's own position
  t.issued(Engine::sync, 3);
  t.issued(Engine::sync, 7);
  t.issued(Engine::sync, 12);
  t.issued(Engine::vector, 5);
  CHECK(t.oldest(Engine::sync, 100) == 3);
  CHECK(t.oldest(Engine::sync, 2) == 2);  // never past the engine's own position
  t.delivered(Engine::sync, 7);           // another queue delivers first
  CHECK(t.oldest(Engine::sync, 100) == 3);
  t.delivered(Engine::sync, 3);  // now 3 and 7 are both done
  CHECK(t.oldest(Engine::sync, 100) == 12);
  CHECK(t.oldest(Engine::vector, 100) == 5);  // engines apart
  t.delivered(Engine::sync, 12);
  CHECK(t.oldest(Engine::sync, 100) == 100);
  t.delivered(Engine::sync, 40);  // not in flight: nothing changes
  CHECK(t.oldest(Engine::sync, 100) == 100);
}
