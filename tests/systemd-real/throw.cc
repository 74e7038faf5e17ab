// throw.cc - tests/systemd-real: a C++ exception nobody catches (std::terminate, SIGABRT).
#include <stdexcept>
#include <string>

__attribute__((noinline)) static int parse_config(const std::string &s)
{
	if (s.empty())
		throw std::runtime_error("empty configuration");
	return static_cast<int>(s.size());
}

int main()
{
	return parse_config(std::string());
}
