// doctest's main, plus a stress mode for the cases that use threads or processes.
//
// BATON_STRESS=N runs only the cases of test suite "concurrency" (tagged
// `* doctest::test_suite("concurrency")`), N rounds in a row, each round as a
// fresh doctest run with fresh fixtures. Command-line filters still apply. It
// ends with one doctest summary line over the distinct cases: a case passes
// only if it passed in every round. A stress run that selects no case fails.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

namespace {

struct stress_tally {
    std::set<std::string> run, failed;
    std::string current;
};

stress_tally& tally() {
    static stress_tally t;
    return t;
}

// Records, across rounds, which cases ran and which failed at least once.
struct stress_listener : doctest::IReporter {
    explicit stress_listener(doctest::ContextOptions const&) {}
    void report_query(doctest::QueryData const&) override {}
    void test_run_start() override {}
    void test_run_end(doctest::TestRunStats const&) override {}
    void test_case_start(doctest::TestCaseData const& d) override {
        tally().current = std::string(d.m_file.c_str()) + ": " + d.m_name;
    }
    void test_case_reenter(doctest::TestCaseData const&) override {}
    void test_case_end(doctest::CurrentTestCaseStats const& s) override {
        tally().run.insert(tally().current);
        if (!s.testCaseSuccess) tally().failed.insert(tally().current);
    }
    void test_case_exception(doctest::TestCaseException const&) override { tally().failed.insert(tally().current); }
    void subcase_start(doctest::SubcaseSignature const&) override {}
    void subcase_end() override {}
    void log_assert(doctest::AssertData const&) override {}
    void log_message(doctest::MessageData const&) override {}
    void test_case_skipped(doctest::TestCaseData const&) override {}
};

} // namespace

DOCTEST_REGISTER_LISTENER("baton_stress", 1, stress_listener);

int main(int argc, char** argv) {
    char const* env = std::getenv("BATON_STRESS");
    int const rounds = env ? std::atoi(env) : 0;
    if (rounds <= 0) {
        doctest::Context ctx(argc, argv);
        return ctx.run();
    }
    int status = 0;
    for (int round = 1; round <= rounds; ++round) {
        doctest::Context ctx(argc, argv);
        ctx.setOption("test-suite", "concurrency");
        if (ctx.run() != 0) status = 1;
        std::printf("[stress] round %d of %d done, %zu case(s) failed so far\n", round, rounds, tally().failed.size());
        std::fflush(stdout);
    }
    for (auto const& name : tally().failed) std::printf("[stress] FAILED in at least one round: %s\n", name.c_str());
    std::size_t const cases = tally().run.size(), failed = tally().failed.size();
    if (cases == 0) {
        std::printf("[stress] no case of test suite \"concurrency\" ran: nothing was stressed\n");
        status = 1;
    }
    // The last summary line is the one .ci/count.py reads: distinct cases, each passed in every round or failed.
    std::printf("[doctest] test cases: %zu | %zu passed | %zu failed | 0 skipped\n", cases, cases - failed,
                cases == 0 ? std::size_t(1) : failed);
    return status;
}
