"""The foundation every layer uses: the domain model, the configuration, wording, what Redis returns."""
