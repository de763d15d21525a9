"""The autograder service: FastAPI app factory, domain folders, web pages, worker dispatch."""
