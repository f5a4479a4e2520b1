// mq-admin init [--group NAME]: create a store (0700), or a group-shared one (setgid 2770,
// files 0660) that every member of NAME can use. An existing store is left as it is, except
// that --group makes it shared with NAME.
#include "admin.hpp"

namespace mq::admin {

Command SetupInit(CLI::App& app, Context&) {
  auto* sub = app.add_subcommand("init", "Create the store");
  auto group = std::make_shared<std::string>();
  sub->add_option("--group", *group, "Make the store shared by the members of GROUP")
      ->type_name("GROUP");
  return {sub, [group](Context& c) {
            OpenOptions o;
            o.dir = c.store.dir;
            o.create = true;
            o.group = *group;
            auto s = Store::Open(o);
            if (!s.ok()) return cli::Fail(s.status());
            // An existing store given --group becomes shared (a new one is made so already).
            if (!group->empty()) {
              Status shared = (*s)->ShareWithGroup(*group);
              if (!shared.ok()) return cli::Fail(shared);
            }
            return 0;
          }};
}

}  // namespace mq::admin
