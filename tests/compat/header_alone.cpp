// Compiled once for each of Poplar's main headers, with only that header (HEADER, set by
// tests/CMakeLists.txt), as C++17: what programs use through it without including it
// themselves must come with it -- poplar_error, and the standard headers Poplar's pull in.
#include HEADER

int headerAloneUses() {
  std::vector<int> v(3);
  std::iota(v.begin(), v.end(), 1);
  std::ostringstream os;
  os << std::setw(4) << std::accumulate(v.begin(), v.end(), 0);
  std::map<std::string, std::unique_ptr<int>> m;
  std::set<std::uint32_t> s{1, 2};
  std::function<int()> f = [&] { return int(s.size() + m.size()); };
  try {
    throw poplar::poplar_error("ok");
  } catch (const poplar::poplar_error &e) {
    std::cout << e.what() << os.str() << f() << std::max(1, 2);
  }
  return 0;
}
