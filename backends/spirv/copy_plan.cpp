#include "backends/spirv/copy_plan.h"

#include <algorithm>

namespace spire::spirv {

namespace {

// Site -> the most batches closed since it last ran, over every path reaching this point, for sites that may hold a
// copy no wait has landed.
using Ages = std::map<uint32_t, uint32_t>;

Ages oldest_of(Ages a, const Ages& b) {
  for (const auto& [site, age] : b) a[site] = std::max(a[site], age);
  return a;
}

uint32_t largest_wait(const kir::Block& b) {
  uint32_t most = 0;
  for (const kir::Stmt& s : b.stmts) {
    if (const auto* w = std::get_if<kir::CopyWait>(&s)) most = std::max(most, w->pending);
    else if (const auto* i = std::get_if<kir::If>(&s)) {
      most = std::max(most, largest_wait(*i->then_body));
      if (i->else_body) most = std::max(most, largest_wait(*i->else_body));
    } else if (const auto* f = std::get_if<kir::For>(&s)) {
      most = std::max(most, largest_wait(*f->body));
    }
  }
  return most;
}

class Planner {
 public:
  // Ages past every wait's count are all alike (any wait lands them), so they stop growing there and a loop's
  // walk reaches a fixed point.
  explicit Planner(uint32_t age_cap) : age_cap_(age_cap) {}

  Ages walk(const kir::Block& b, Ages ages) {
    for (const kir::Stmt& s : b.stmts) {
      if (const auto* c = std::get_if<kir::CopyToShared>(&s)) {
        auto [it, added] = plan.site_of.emplace(c, uint32_t(plan.site_of.size()));
        if (ages.count(it->second)) plan.lands_before_rerun.insert(it->second);
        ages[it->second] = 0;
      } else if (std::holds_alternative<kir::CopyCommit>(s)) {
        for (auto& [site, age] : ages) age = std::min(age + 1, age_cap_);
      } else if (const auto* w = std::get_if<kir::CopyWait>(&s)) {
        std::vector<uint32_t>& lands = plan.lands[w];
        for (auto it = ages.begin(); it != ages.end();) {
          if (it->second > w->pending) {
            if (std::find(lands.begin(), lands.end(), it->first) == lands.end()) lands.push_back(it->first);
            it = ages.erase(it);
          } else {
            ++it;
          }
        }
      } else if (const auto* i = std::get_if<kir::If>(&s)) {
        Ages then_out = walk(*i->then_body, ages);
        ages = oldest_of(then_out, i->else_body ? walk(*i->else_body, ages) : ages);
      } else if (const auto* f = std::get_if<kir::For>(&s)) {
        // The body runs zero or more times: what may hold a copy at its top joins the entry and every round's end.
        for (;;) {
          Ages top = oldest_of(ages, walk(*f->body, ages));
          if (top == ages) break;
          ages = std::move(top);
        }
      }
    }
    return ages;
  }

  CopyPlan plan;

 private:
  uint32_t age_cap_;
};

}  // namespace

CopyPlan plan_copy_sites(const kir::Block& body) {
  Planner p(largest_wait(body) + 1);
  p.walk(body, {});
  return std::move(p.plan);
}

}  // namespace spire::spirv
