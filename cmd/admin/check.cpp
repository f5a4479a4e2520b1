// mq-admin check: verify that every index agrees with the messages and the counters. Prints
// each problem on stdout and exits 10 if there is any.
#include <fmt/format.h>

#include "admin.hpp"

namespace mq::admin {

Command SetupCheck(CLI::App& app, Context&) {
  auto* sub = app.add_subcommand("check", "Verify the store's indexes and counters");
  return {sub, [](Context& ctx) {
            auto store = ctx.OpenForReading();
            if (!store.ok()) return cli::Fail(store.status());
            std::vector<std::string> problems;
            Status s = (*store)->Check(problems);
            if (!s.ok()) return cli::Fail(s);
            if (problems.empty()) return 0;
            FdWriter out(1, "stdout");
            for (auto& p : problems) out.Append(p + "\n");
            (void)out.Flush();
            return cli::Fail(Status::Corrupted(fmt::format("{} problem(s) found; first: {}",
                                                           problems.size(), problems.front()),
                                               (*store)->dir()));
          }};
}

}  // namespace mq::admin
