"""Small building blocks every layer uses (deadlines)."""
