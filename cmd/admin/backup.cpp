// mq-admin backup DIR: a consistent, compacted copy of the store in DIR (new or empty),
// taken from one read transaction while other processes keep sending and receiving. DIR
// opens as a store and passes check.
#include "admin.hpp"

namespace mq::admin {

Command SetupBackup(CLI::App& app, Context&) {
  auto dir = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("backup", "Hot, consistent copy of the store");
  sub->add_option("DIR", *dir, "Target directory (new or empty)")->required();
  return {sub, [dir](Context& ctx) {
            auto store = ctx.Open();
            if (!store.ok()) return cli::Fail(store.status());
            Status s = (*store)->Backup(*dir);
            return s.ok() ? 0 : cli::Fail(s.WithSubject(*dir));
          }};
}

}  // namespace mq::admin
