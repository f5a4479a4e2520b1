// mq-admin init [--group NAME] [--owner USER] [--max-store-size SIZE]: create a store
// (0700), or a group-shared one (setgid 2770, files 0660) that every member of NAME can use;
// the caller's, or USER's (root only). An existing store is left as it is, except that
// --group makes it shared with NAME and --max-store-size sets the size up to which it grows
// by itself (0: no limit of its own).
#include "admin.hpp"
#include "base/units.hpp"

namespace mq::admin {

Command SetupInit(CLI::App& app, Context&) {
  auto* sub = app.add_subcommand("init", "Create the store");
  auto group = std::make_shared<std::string>();
  auto max_size = std::make_shared<std::string>();
  auto owner = std::make_shared<std::string>();
  sub->add_option("--group", *group, "Make the store shared by the members of GROUP")
      ->type_name("GROUP");
  sub->add_option("--owner", *owner,
                  "Make the store USER's (root only); needed to make one in an empty "
                  "directory of USER's")
      ->type_name("USER");
  sub->add_option("--max-store-size", *max_size,
                  "Let the store grow by itself up to SIZE (0: no limit but 1TiB)")
      ->type_name("SIZE");
  return {sub, [group, max_size, owner](Context& c) {
            std::optional<uint64_t> limit;
            if (!max_size->empty()) {
              auto l = ParseSize(*max_size);
              if (!l.ok()) return cli::Fail(l.status());
              limit = *l;
            }
            OpenOptions o;
            o.dir = c.store.dir;
            o.create = true;
            o.group = *group;
            o.owner = *owner;
            auto s = Store::Open(o);
            if (!s.ok()) return cli::Fail(s.status());
            // An existing store given --group becomes shared (a new one is made so already).
            if (!group->empty()) {
              Status shared = (*s)->ShareWithGroup(*group);
              if (!shared.ok()) return cli::Fail(shared);
            }
            if (limit) {
              Status set = (*s)->SetMaxSize(*limit);
              if (!set.ok()) return cli::Fail(set);
            }
            return 0;
          }};
}

}  // namespace mq::admin
