// core::WorkerPool: long-lived workers answer many requests each, keep their state between requests, report an
// InputError as ChildPool's children do, and a worker that dies fails its request instead of hanging the caller.
#include "edgc/core/worker_pool.hpp"

#include <signal.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "edgc/core/error.hpp"

namespace edgc::core {
namespace {

TEST(WorkerPool, WorkersServeManyRequestsAndKeepTheirStateBetweenThem) {
  int served = 0;  // each worker's own copy: counts the requests that worker answered
  WorkerPool pool(2, [&served](const std::string& request) {
    ++served;
    return request + ":" + std::to_string(::getpid()) + ":" + std::to_string(served);
  });
  EXPECT_EQ(pool.idle(), 2U);
  std::map<std::size_t, std::string> answers;
  std::size_t next = 0;
  while (answers.size() < 10) {
    while (next < 10 && pool.idle() > 0) {
      pool.submit(next, "r" + std::to_string(next));
      ++next;
    }
    const std::optional<ChildPool::Finished> f = pool.wait_any();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->code, 0) << f->output;
    answers[f->id] = f->output;
  }
  std::set<std::string> pids;
  int most = 0;
  for (const auto& [id, text] : answers) {
    EXPECT_EQ(text.rfind("r" + std::to_string(id) + ":", 0), 0U) << text;
    const std::size_t a = text.find(':');
    const std::size_t b = text.find(':', a + 1);
    pids.insert(text.substr(a + 1, b - a - 1));
    most = std::max(most, std::stoi(text.substr(b + 1)));
  }
  EXPECT_LE(pids.size(), 2U);
  EXPECT_EQ(pids.count(std::to_string(::getpid())), 0U);  // not this process
  EXPECT_GE(most, 5);                                     // a worker served several requests
  EXPECT_EQ(served, 0);                                   // the caller's copy was never touched
  EXPECT_FALSE(pool.wait_any().has_value());              // nothing running
}

TEST(WorkerPool, FailuresComeBackAsChildPoolReportsThem) {
  WorkerPool pool(1, [](const std::string& request) -> std::string {
    if (request == "bad") throw ConfigError("file.json", "model.layers", "must be >= 1");
    if (request == "throw") throw std::runtime_error("boom");
    return "ok";
  });
  pool.submit(1, "bad");
  ChildPool::Finished f = *pool.wait_any();
  EXPECT_EQ(f.id, 1U);
  EXPECT_EQ(f.code, ChildPool::kInputFailure);
  try {
    ChildPool::rethrow(f, "request");
    FAIL() << "no exception";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.where(), "file.json");
    EXPECT_EQ(e.field(), "model.layers");
  }
  pool.submit(2, "throw");
  f = *pool.wait_any();
  EXPECT_EQ(f.code, ChildPool::kOtherFailure);
  EXPECT_EQ(f.output, "boom");
  pool.submit(3, "fine");  // the worker lives on after a failed request
  f = *pool.wait_any();
  EXPECT_EQ(f.code, 0);
  EXPECT_EQ(f.output, "ok");
}

TEST(WorkerPool, AWorkerThatDiesFailsItsRequestAndTheTimeoutReturns) {
  WorkerPool pool(1, [](const std::string& request) -> std::string {
    if (request == "die") ::raise(SIGKILL);
    if (request == "slow") ::sleep(30);
    return "ok";
  });
  pool.submit(7, "slow");
  EXPECT_FALSE(pool.wait_any(0.05).has_value());  // still running: the timeout returns
  EXPECT_EQ(pool.running(), 1U);
  WorkerPool dying(1, [](const std::string&) -> std::string {
    ::raise(SIGKILL);
    return "";
  });
  dying.submit(3, "die");
  const ChildPool::Finished f = *dying.wait_any();
  EXPECT_EQ(f.id, 3U);
  EXPECT_EQ(f.code, ChildPool::kOtherFailure);
  EXPECT_EQ(f.output, "killed by signal 9");
  EXPECT_EQ(dying.idle(), 0U);
  EXPECT_EQ(dying.running(), 0U);
  // The slow worker is killed by the pool's destructor: the test does not wait 30 s.
}

}  // namespace
}  // namespace edgc::core
