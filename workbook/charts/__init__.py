"""Chart builders (frame -> altair chart): ``common`` (shared look), ``training``, ``serving``, ``validation``.

Each tab's module has ``TEMPLATES`` (its charts, in order) and ``tab_datasets`` (what they show)."""
