// mq-admin backup DIR: a consistent, compacted copy of the store in DIR (new or empty),
// taken from one read transaction while other processes keep sending and receiving. DIR
// opens as a store and passes check.
#include <sys/stat.h>

#include <fmt/format.h>

#include "admin.hpp"
#include "base/paths.hpp"
#include "progress.hpp"

namespace mq::admin {

Command SetupBackup(CLI::App& app, Context& ctx) {
  auto dir = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("backup", "Hot, consistent copy of the store");
  sub->add_option("DIR", *dir, "Target directory (new or empty)")->required();
  AddQuietOption(*sub, ctx.quiet);
  return {sub, [dir](Context& ctx) {
            auto store = ctx.OpenForReading();
            if (!store.ok()) return cli::Fail(store.status());
            Progress progress("backup to " + *dir, ctx.quiet);
            Status s = (*store)->Backup(*dir);
            if (!s.ok()) return cli::Fail(s.WithSubject(*dir));
            struct stat st {};
            uint64_t size = ::stat(StorePaths(*dir).data().c_str(), &st) == 0
                                ? static_cast<uint64_t>(st.st_size)
                                : 0;
            progress.Done(*dir, fmt::format("backup of {} written, data.mdb {}",
                                            (*store)->dir(), HumanBytes(size)));
            return 0;
          }};
}

}  // namespace mq::admin
